package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/client"
)

// SelfRepository is the name of hlsbench's own image.
const SelfRepository = Repository + "/hlsbench"

// versionVar is set by -ldflags -X to the version a built binary reports.
const versionVar = "github.com/hlsbench/hlsbench/cmd/cli.Version"

// SelfOptions say what BuildSelf puts in the image.
type SelfOptions struct {
	// Binary is a static hlsbench (CGO_ENABLED=0); "" builds one from the
	// module at Dir with go build.
	Binary string
	Dir    string // the module's root; "" is found from the working directory up
	// Version names the image (hlsbench/hlsbench:VERSION) and is built
	// into a binary built here; "" asks Binary (hlsbench --version), else "dev".
	Version  string
	Force    bool
	TempDir  string
	Progress io.Writer
}

// BuildSelf makes hlsbench/hlsbench:VERSION: a static hlsbench binary as
// /hlsbench in an image FROM scratch, its entrypoint. The image's inputs
// are the binary's sha256: the same binary is not imaged twice.
func BuildSelf(ctx context.Context, cli *client.Client, o SelfOptions) (Built, error) {
	bin := o.Binary
	if bin == "" {
		tmp, err := os.MkdirTemp(o.TempDir, "hlsbench-self-")
		if err != nil {
			return Built{}, fmt.Errorf("build hlsbench: %w", err)
		}
		defer os.RemoveAll(tmp)
		start := time.Now()
		if bin, err = goBuild(ctx, o.Dir, o.Version, filepath.Join(tmp, "hlsbench")); err != nil {
			return Built{}, err
		}
		logf(o.Progress, "go build (CGO_ENABLED=0): %s", secs(time.Since(start)))
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return Built{}, fmt.Errorf("hlsbench binary: %w", err)
	}
	if err := checkStatic(bin); err != nil {
		return Built{}, err
	}
	version := o.Version
	if version == "" {
		if version, err = binaryVersion(ctx, bin); err != nil {
			return Built{}, err
		}
	}
	tag, err := sanitizeTag(version)
	if err != nil {
		return Built{}, fmt.Errorf("hlsbench version: %w", err)
	}
	ref := SelfRepository + ":" + tag
	sum := sha256.Sum256(data)
	inputs := hex.EncodeToString(sum[:])

	ii, ok, err := inspect(ctx, cli, ref)
	if err != nil {
		return Built{}, err
	}
	if ok && !o.Force && labels(ii)[LabelInputs] == inputs {
		logf(o.Progress, "%s up to date (%.19s)", ref, ii.ID)
		return Built{Ref: ref, ID: ii.ID, UpToDate: true}, nil
	}
	start := time.Now()
	lf, err := writeLayer(o.TempDir, func(w io.Writer) error { return selfLayer(w, data) })
	if err != nil {
		return Built{}, fmt.Errorf("build %s: %w", ref, err)
	}
	defer removeLayer(lf)
	// FROM scratch, the binary its entrypoint; loaded (load.go), so the
	// same binary gives the same image ID.
	cfg := newConfig([]string{lf.DiffID}, containerConfig{Entrypoint: []string{"/hlsbench"},
		Labels: map[string]string{LabelOwner: "1", LabelInputs: inputs, LabelVersion: version, LabelSource: "self"}},
		"hlsbench images build --self")
	ids, err := load(ctx, cli, []loadImage{{Ref: ref, Config: cfg}}, map[string]layerFile{lf.DiffID: lf})
	if err != nil {
		return Built{}, fmt.Errorf("build %s: %w", ref, err)
	}
	id := ids[0]
	logf(o.Progress, "%s (%.19s, %d MB binary): %s", ref, id, len(data)>>20, secs(time.Since(start)))
	if ok && ii.ID != id {
		removeReplaced(ctx, cli, []string{ii.ID}, o.Progress)
	}
	return Built{Ref: ref, ID: id}, nil
}

// selfLayer is hlsbench's image's one layer: the binary as /hlsbench,
// mode 0755, stamped with Epoch.
func selfLayer(w io.Writer, binary []byte) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "hlsbench", Mode: 0o755, Size: int64(len(binary)), Typeflag: tar.TypeReg, ModTime: Epoch}); err != nil {
		return err
	}
	if _, err := tw.Write(binary); err != nil {
		return err
	}
	return tw.Close()
}

// checkStatic fails for a binary with an ELF interpreter: it would not run
// in an image FROM scratch ("no such file or directory").
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("hlsbench binary %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("hlsbench binary %s is linked dynamically (it needs glibc, and the image has none): build it with CGO_ENABLED=0 go build ./cmd/hlsbench", path)
		}
	}
	return nil
}

// IsStatic reports whether the binary at path is statically linked.
func IsStatic(path string) bool { return checkStatic(path) == nil }

// binaryVersion asks an hlsbench binary its version ("hlsbench version X").
func binaryVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return "", fmt.Errorf("%s --version printed nothing", bin)
	}
	return f[len(f)-1], nil
}

// goBuild builds ./cmd/hlsbench of the module at dir without cgo.
func goBuild(ctx context.Context, dir, version, out string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = ModuleRoot(); err != nil {
			return "", err
		}
	}
	if version == "" {
		version = "dev"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-X "+versionVar+"="+version, "-o", out, "./cmd/hlsbench")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/hlsbench in %s: %w\n%s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// ModuleRoot finds hlsbench's module root from the working directory up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 64 {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module github.com/hlsbench/hlsbench\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("not in hlsbench's source tree (no go.mod of github.com/hlsbench/hlsbench above the working directory): pass a static binary instead")
}
