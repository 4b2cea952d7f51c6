package images

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/hlsbench/hlsbench/engines/launch"
)

// readStream reads the daemon's JSON progress stream (an import or a
// build) to its end and returns the image ID it names. The last lines of
// a build's output go with its error.
func readStream(r io.Reader) (string, error) {
	dec := json.NewDecoder(r)
	var id string
	var tail []string
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("read the daemon's progress: %w", err)
		}
		if m.Error != nil {
			msg := m.Error.Message
			if len(tail) > 0 {
				msg += "\n" + strings.Join(tail, "\n")
			}
			return "", errors.New(msg)
		}
		if m.Aux != nil {
			var aux struct{ ID string }
			if json.Unmarshal(*m.Aux, &aux) == nil && aux.ID != "" {
				id = aux.ID
			}
		}
		if strings.HasPrefix(m.Status, "sha256:") {
			id = m.Status
		}
		if s := strings.TrimRight(m.Stream, "\n"); s != "" {
			tail = append(tail, s)
			if len(tail) > 20 {
				tail = tail[1:]
			}
		}
	}
	if id == "" {
		return "", errors.New("the daemon named no image")
	}
	return id, nil
}

// inspect returns the image ref names, or ok=false when there is none.
func inspect(ctx context.Context, cli *client.Client, ref string) (image.InspectResponse, bool, error) {
	ii, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return ii, false, nil
	}
	if err != nil {
		return ii, false, fmt.Errorf("inspect %s: %w", ref, err)
	}
	return ii, true, nil
}

func labels(ii image.InspectResponse) map[string]string {
	if ii.Config == nil {
		return nil
	}
	return ii.Config.Labels
}

// tarContext is a build context holding files (name → content, mode 0644
// unless modes says otherwise).
func tarContext(files map[string][]byte, modes map[string]int64) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range sortedKeys(files) {
		mode := int64(0o644)
		if m, ok := modes[name]; ok {
			mode = m
		}
		hdr := &tar.Header{Name: name, Mode: mode, Size: int64(len(files[name])), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// buildImage builds the context ctxTar (with the classic builder: bookworm's
// daemon has no BuildKit through the API) and returns the image's ID.
func buildImage(ctx context.Context, cli *client.Client, ctxTar []byte, o build.ImageBuildOptions) (string, error) {
	o.Remove, o.ForceRemove = true, true
	o.Version = build.BuilderV1
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	o.Labels[LabelOwner] = "1"
	resp, err := cli.ImageBuild(ctx, bytes.NewReader(ctxTar), o)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	return readStream(resp.Body)
}

// Output is what a one-shot container printed.
type Output struct {
	Stdout, Stderr string
	ExitCode       int64
}

// RunOnce runs cmd (the command, not the image's entrypoint) in a new
// container of ref with host networking, labelled org.hlsbench=1 and with
// labels, waits for it to exit and removes it, on every path
// (launch.Docker.Run). A command that exits non-zero is no error: its
// ExitCode says so.
func RunOnce(ctx context.Context, cli *client.Client, ref string, cmd []string, labels map[string]string) (Output, error) {
	o, err := launch.Docker{Client: cli}.Run(ctx, launch.Spec{Name: "once", Image: ref, Command: cmd, Labels: labels})
	out := Output{Stdout: string(o.Stdout), Stderr: string(o.Stderr), ExitCode: int64(o.ExitCode)}
	if err != nil && o.ExitCode == 0 {
		return out, fmt.Errorf("run %s in %s: %w", strings.Join(cmd, " "), ref, err)
	}
	return out, nil
}

// removeReplaced removes images a rebuild left without a tag (children
// first: an engine image is a child of the base). An image still in use
// stays; that is not an error.
func removeReplaced(ctx context.Context, cli *client.Client, ids []string, progress io.Writer) {
	for _, id := range ids {
		ii, ok, err := inspect(ctx, cli, id)
		if err != nil || !ok || len(ii.RepoTags) > 0 {
			continue
		}
		if _, err := cli.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true}); err == nil {
			logf(progress, "removed the replaced image %.19s", id)
		}
	}
}
