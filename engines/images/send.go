package images

import (
	"context"
	"fmt"
	"io"

	"github.com/docker/docker/client"
)

// Sent says what Send did with one image.
type Sent struct {
	Ref string
	ID  string
	// Had is true when the host already held the image with that ID:
	// nothing was sent.
	Had   bool
	Bytes int64 // the image archive's size as sent; 0 when Had
}

// Send makes the host behind to hold the images refs as from holds them:
// an image to lacks, or holds with another ID, is saved from from and
// loaded into to through the Engine API, never pulled from a registry.
// Images hlsbench makes have the same ID wherever they were made (see
// Epoch), so a host that built its own copy is sent nothing.
func Send(ctx context.Context, from, to *client.Client, refs ...string) ([]Sent, error) {
	out := make([]Sent, 0, len(refs))
	for _, ref := range refs {
		src, ok, err := inspect(ctx, from, ref)
		if err != nil {
			return out, err
		}
		if !ok {
			return out, fmt.Errorf("send %s: this host has no such image", ref)
		}
		dst, ok, err := inspect(ctx, to, ref)
		if err != nil {
			return out, err
		}
		if ok && dst.ID == src.ID {
			out = append(out, Sent{Ref: ref, ID: src.ID, Had: true})
			continue
		}
		n, err := copyImage(ctx, from, to, ref)
		if err != nil {
			return out, fmt.Errorf("send %s: %w", ref, err)
		}
		dst, ok, err = inspect(ctx, to, ref)
		if err != nil {
			return out, err
		}
		if !ok || dst.ID != src.ID {
			return out, fmt.Errorf("send %s: the host holds %q after the load, not %s", ref, dst.ID, src.ID)
		}
		out = append(out, Sent{Ref: ref, ID: src.ID, Bytes: n})
	}
	return out, nil
}

// copyImage streams ref's archive from one daemon into the other.
func copyImage(ctx context.Context, from, to *client.Client, ref string) (int64, error) {
	rc, err := from.ImageSave(ctx, []string{ref})
	if err != nil {
		return 0, fmt.Errorf("save: %w", err)
	}
	defer rc.Close()
	cr := &countReader{r: rc}
	resp, err := to.ImageLoad(ctx, cr, client.ImageLoadWithQuiet(true))
	if err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	defer resp.Body.Close()
	if err := readLoad(resp.Body); err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	return cr.n, nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
