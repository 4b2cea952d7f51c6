package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Remove removes the images in list, as `hlsbench clean --images` does,
// a line per image on w. An image a container uses (a live run's) is
// refused by the daemon: it stays and its error is returned with the
// others. An engine's image is a child of the base, so a parent refused
// while a child of list remained is tried again after the others. With
// dryRun nothing is removed; w says what would be.
func Remove(ctx context.Context, cli *client.Client, list []Image, dryRun bool, w io.Writer) error {
	var errs []error
	for round := 0; round < 2 && len(list) > 0; round++ {
		errs = nil
		var again []Image
		for _, im := range list {
			name := im.ID
			if len(im.Tags) > 0 {
				name = strings.Join(im.Tags, ", ")
			}
			if dryRun {
				fmt.Fprintf(w, "hlsbench: would remove image %s (a dry run)\n", name)
				continue
			}
			// Force only removes several tags at once; it never removes an
			// image a container uses.
			if _, err := cli.ImageRemove(ctx, im.ID, image.RemoveOptions{Force: len(im.Tags) > 1, PruneChildren: true}); err != nil {
				if client.IsErrNotFound(err) {
					continue
				}
				again = append(again, im)
				errs = append(errs, fmt.Errorf("image %s: %w", name, err))
				continue
			}
			fmt.Fprintf(w, "hlsbench: removed image %s\n", name)
		}
		list = again
	}
	return errors.Join(errs...)
}
