package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	// Parts are the suites a merged manifest was made from (MergeManifests),
	// each with the flags it ran with; empty for one suite's own.
	Parts []ManifestPart `json:"parts,omitempty"`
}

// ManifestPart is one suite of a merged manifest: a page measured in parts,
// each of which fits in a session, and reported as one.
type ManifestPart struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Workloads []string  `json:"workloads"`
	Args      []string  `json:"args"`
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

// MergeManifests is one manifest for several suites (parts, each named,
// e.g. by its directory): engines, workloads, cells and runs in the order
// the parts list them. A cell finished in one part and not in another is
// the finished one; a cell finished in two parts is an error, since the
// page can show one measurement of it. Parts of a merged manifest are
// merged again part by part.
func MergeManifests(names []string, parts []Manifest) (Manifest, error) {
	if len(names) != len(parts) {
		return Manifest{}, fmt.Errorf("merge manifests: %d names for %d manifests", len(names), len(parts))
	}
	m := Manifest{SchemaVersion: 1}
	type key struct{ engine, topology, workload string }
	at := map[key]int{}      // cell → index in m.Cells
	from := map[key]string{} // cell → the part it came from
	for i, p := range parts {
		if m.CreatedAt.IsZero() || p.CreatedAt.Before(m.CreatedAt) {
			m.CreatedAt = p.CreatedAt
		}
		if p.UpdatedAt.After(m.UpdatedAt) {
			m.UpdatedAt = p.UpdatedAt
		}
		if m.Tool == "" {
			m.Tool = p.Tool
		} else if p.Tool != m.Tool && !slices.Contains(strings.Split(m.Tool, ", "), p.Tool) {
			m.Tool += ", " + p.Tool
		}
		m.Engines = appendNew(m.Engines, p.Engines...)
		m.Workloads = appendNew(m.Workloads, p.Workloads...)
		for _, e := range p.Missing {
			if !slices.ContainsFunc(m.Missing, func(x MissingEngine) bool { return x.Name == e.Name }) {
				m.Missing = append(m.Missing, e)
			}
		}
		if len(p.Parts) > 0 {
			m.Parts = append(m.Parts, p.Parts...)
		} else {
			m.Parts = append(m.Parts, ManifestPart{Name: names[i], CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Workloads: p.Workloads, Args: p.Args})
		}
		for _, c := range p.Cells {
			k := key{c.Engine, c.Topology, c.Workload}
			j, seen := at[k]
			switch {
			case !seen:
				at[k], from[k] = len(m.Cells), names[i]
				m.Cells = append(m.Cells, c)
			case c.Complete && m.Cells[j].Complete:
				where := c.Engine
				if c.Topology != "" {
					where += " " + c.Topology
				}
				return Manifest{}, fmt.Errorf("%s and %s both finished %s on %s: merge one of them", from[k], names[i], c.Workload, where)
			case c.Complete:
				m.Cells[j], from[k] = c, names[i]
			}
		}
		m.Runs = appendNew(m.Runs, p.Runs...)
	}
	return m, nil
}

func appendNew(list []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	return list
}
