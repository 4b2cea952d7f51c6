package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
)

// Images hlsbench makes are loaded, not imported or built: the daemon
// stamps an import or a build with the time it happened, so the same
// root filesystem gave another image ID every time. A load takes the
// image's configuration as written here — its creation time fixed at
// Epoch, its layer a tar with every file time set to Epoch — and the
// image ID is the digest of that configuration: the same inputs give the
// same ID, on any machine.

// Epoch is the time every image and file in it is stamped with, and
// SOURCE_DATE_EPOCH while its root filesystem is written (tools that
// would write today's date, as useradd's last password change, write
// this one instead).
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// imageConfig is an image's configuration, as docker load reads it.
type imageConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Created      time.Time       `json:"created"`
	Config       containerConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []imageHistory `json:"history"`
}

type containerConfig struct {
	Env        []string          `json:"Env,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

type imageHistory struct {
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by"`
}

// newConfig is the configuration of an image of the layers diffIDs
// (sha256:…, the uncompressed tars' digests), made by what.
func newConfig(diffIDs []string, cc containerConfig, what string) []byte {
	c := imageConfig{Architecture: runtime.GOARCH, OS: "linux", Created: Epoch, Config: cc}
	c.RootFS.Type, c.RootFS.DiffIDs = "layers", diffIDs
	for range diffIDs {
		c.History = append(c.History, imageHistory{Created: Epoch, CreatedBy: what})
	}
	b, err := json.Marshal(c) // maps marshal in key order: the same bytes every time
	if err != nil {
		panic(err) // nothing in it can fail to marshal
	}
	return b
}

// configID is the image ID of a configuration: its digest.
func configID(config []byte) string {
	s := sha256.Sum256(config)
	return "sha256:" + hex.EncodeToString(s[:])
}

// loadImage is one image of an archive: its name and configuration.
type loadImage struct {
	Ref    string
	Config []byte
}

// layerFile is a layer tar written to disk, and its digest.
type layerFile struct {
	Path   string
	DiffID string // sha256:…
	Size   int64
}

// writeLayer writes what write produces to a file in dir and digests it.
func writeLayer(dir string, write func(io.Writer) error) (layerFile, error) {
	f, err := os.CreateTemp(dir, "hlsbench-layer-*.tar")
	if err != nil {
		return layerFile{}, fmt.Errorf("layer: %w", err)
	}
	h := sha256.New()
	werr := write(io.MultiWriter(f, h))
	size, _ := f.Seek(0, io.SeekCurrent)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return layerFile{}, fmt.Errorf("layer: %w", werr)
	}
	return layerFile{Path: f.Name(), DiffID: "sha256:" + hex.EncodeToString(h.Sum(nil)), Size: size}, nil
}

// load sends images to the daemon as one docker-load archive (the format
// docker save writes): each image's configuration, the layers their
// configurations name that the daemon lacks (layers, by diff ID; one the
// daemon has is named and not sent), and the manifest. It returns the
// images' IDs, which are their configurations' digests.
func load(ctx context.Context, cli *client.Client, imgs []loadImage, layers map[string]layerFile) ([]string, error) {
	type entry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	var manifest []entry
	ids := make([]string, len(imgs))
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		put := func(name string, size int64, r io.Reader) error {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, ModTime: Epoch}); err != nil {
				return err
			}
			_, err := io.Copy(tw, r)
			return err
		}
		var err error
		sent := map[string]bool{}
		for i, im := range imgs {
			ids[i] = configID(im.Config)
			var c imageConfig
			if err = json.Unmarshal(im.Config, &c); err != nil {
				break
			}
			e := entry{Config: ids[i][len("sha256:"):] + ".json", RepoTags: []string{im.Ref}}
			for _, d := range c.RootFS.DiffIDs {
				name := d[len("sha256:"):] + "/layer.tar"
				e.Layers = append(e.Layers, name)
				lf, ok := layers[d]
				if !ok || sent[d] {
					continue
				}
				var f *os.File
				if f, err = os.Open(lf.Path); err != nil {
					break
				}
				err = put(name, lf.Size, f)
				f.Close()
				if err != nil {
					break
				}
				sent[d] = true
			}
			if err != nil {
				break
			}
			if err = put(e.Config, int64(len(im.Config)), bytes.NewReader(im.Config)); err != nil {
				break
			}
			manifest = append(manifest, e)
		}
		if err == nil {
			b, _ := json.Marshal(manifest)
			err = put("manifest.json", int64(len(b)), bytes.NewReader(b))
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	resp, err := cli.ImageLoad(ctx, pr, client.ImageLoadWithQuiet(true))
	if err != nil {
		pr.CloseWithError(err)
		return nil, fmt.Errorf("load: %w", err)
	}
	defer resp.Body.Close()
	if err := readLoad(resp.Body); err != nil {
		pr.CloseWithError(err)
		return nil, fmt.Errorf("load: %w", err)
	}
	pr.Close()
	for i, im := range imgs {
		ii, ok, err := inspect(ctx, cli, im.Ref)
		if err != nil {
			return nil, err
		}
		if !ok || ii.ID != ids[i] {
			return nil, fmt.Errorf("load: %s is %q after the load, not %s", im.Ref, ii.ID, ids[i])
		}
	}
	return ids, nil
}

// readLoad reads a load's progress stream to its end: an error in it is
// the load's.
func readLoad(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the daemon's progress: %w", err)
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
	}
}

// removeLayer removes a layer file.
func removeLayer(lf layerFile) {
	if lf.Path != "" {
		os.Remove(lf.Path)
	}
}
