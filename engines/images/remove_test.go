package images

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/hlsbench/hlsbench/engines/launch"
)

// throwaway imports a one-file image tagged ref, labelled as hlsbench's
// and as this test's, and removes it (and its tags) at the end.
func throwaway(t *testing.T, cli *client.Client, ref string) string {
	t.Helper()
	ctx := context.Background()
	tarb, err := tarContext(map[string][]byte{"hello": []byte("hi\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: bytes.NewReader(tarb), SourceName: "-"}, ref,
		image.ImportOptions{Changes: []string{"LABEL " + LabelOwner + "=1 " + testLabel + "=" + t.Name()}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := readStream(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), id, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	return id
}

// ours is what List reports of the images tagged under repo.
func ours(t *testing.T, cli *client.Client, repo string) []Image {
	t.Helper()
	all, err := List(context.Background(), launch.Docker{Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	var out []Image
	for _, im := range all {
		for _, tag := range im.Tags {
			if strings.HasPrefix(tag, repo+"/") {
				out = append(out, im)
				break
			}
		}
	}
	return out
}

// Remove takes a parent and its child in either order, leaves an image a
// container uses (naming it in the error), and with dryRun removes
// nothing. Only this test's images are given to it: the real ones stay.
func TestRemove(t *testing.T) {
	cli := docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := make([]byte, 4)
	rand.Read(b)
	repo := "hlsbench-test-" + hex.EncodeToString(b)
	parent := throwaway(t, cli, repo+"/parent:1")
	if _, err := labelImage(ctx, cli, repo+"/parent:1", repo+"/child:1", map[string]string{LabelOwner: "1", testLabel: t.Name()}); err != nil {
		t.Fatal(err)
	}
	used := throwaway(t, cli, repo+"/used:1")
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: used, Cmd: []string{"/hello"}, Labels: map[string]string{LabelOwner: "1", testLabel: t.Name()}},
		nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})

	list := ours(t, cli, repo)
	if len(list) != 3 || list[0].Tags[0] != repo+"/child:1" || list[1].ID != parent {
		t.Fatalf("List: %+v, want child, parent, used (sorted by tag)", list)
	}
	list[0], list[1] = list[1], list[0] // the parent first: refused until its child is gone
	var out bytes.Buffer
	if err := Remove(ctx, cli, list, true, &out); err != nil || strings.Count(out.String(), "would remove image") != 3 {
		t.Errorf("dry run: %v\n%s", err, out.String())
	}
	if n := len(ours(t, cli, repo)); n != 3 {
		t.Fatalf("a dry run removed images: %d of 3 left", n)
	}
	out.Reset()
	err = Remove(ctx, cli, list, false, &out)
	if err == nil || !strings.Contains(err.Error(), repo+"/used:1") || strings.Contains(err.Error(), "parent") {
		t.Errorf("Remove: %v; want only the used image's refusal", err)
	}
	left := ours(t, cli, repo)
	if len(left) != 1 || left[0].ID != used {
		t.Errorf("left %+v, want only the image the container uses", left)
	}
	for _, want := range []string{"removed image " + repo + "/parent:1", "removed image " + repo + "/child:1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
