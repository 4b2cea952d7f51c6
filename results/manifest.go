package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ManifestName is a suite directory's index file.
const ManifestName = "manifest.json"

// Manifest is a suite directory's index: what the suite runs, with which
// settings, which cells finished and in which run file.
type Manifest struct {
	SchemaVersion int       `json:"schema_version"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	Tool          string    `json:"tool"`
	Engines       []string  `json:"engines"`
	// Missing are the engines a suite without --engine left out because
	// they are not installed here, with why.
	Missing   []MissingEngine `json:"missing,omitempty"`
	Workloads []string        `json:"workloads"`
	// Args are the flags the suite started with; --resume runs with them.
	Args  []string    `json:"args"`
	Cells []SuiteCell `json:"cells"`
	Runs  []string    `json:"runs"`
}

// MissingEngine is an engine a suite could not run on this machine.
type MissingEngine struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// SuiteCell is one engine × workload of a suite.
type SuiteCell struct {
	Engine string `json:"engine"`
	// Topology is the cell's topology; "" is plaintext.
	Topology string `json:"topology,omitempty"`
	Workload string `json:"workload"`
	Complete bool   `json:"complete"`
	File     string `json:"file,omitempty"` // the run file with its passes
}

// ReadManifest reads dir's manifest.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", ManifestName, err)
	}
	if m.SchemaVersion != 1 {
		return m, fmt.Errorf("%s: schema_version %d, want 1", ManifestName, m.SchemaVersion)
	}
	return m, nil
}

// Save writes the manifest into dir atomically.
func (m *Manifest) Save(dir string) error {
	m.UpdatedAt = time.Now().UTC()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+ManifestName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("suite manifest: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ManifestName)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("suite manifest: %w", err)
	}
	return nil
}
