package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// imageTooLarge is a pull refused by Config.MaxImageBytes.
type imageTooLarge struct {
	ref          string
	bytes, limit int64
	announced    bool // bytes are what the registry announced, not yet unpacked
}

func (e *imageTooLarge) Error() string {
	what := "unpacks to"
	if e.announced {
		what = "has layers of at least"
	}
	return fmt.Sprintf("image %s %s %s, over this host's image size limit of %s: use a smaller image, or ask the operator",
		e.ref, what, sizeText(e.bytes), sizeText(e.limit))
}

// sizeText is a byte count as MiB, or GiB from 10 GiB up.
func sizeText(b int64) string {
	if b >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// pull pulls ref. Under Config.MaxImageBytes it watches the progress the
// daemon streams: each layer it downloads announces its size, and once
// they add up to more than the limit the pull is cut off (the daemon
// cancels a pull whose client went away), before it fills the disk. A
// layer's announced size is compressed, so an image that passes may still
// unpack to more; it is measured once pulled and removed again if so.
func (r *Runtime) pull(ctx context.Context, ref string) error {
	limit := r.cfg.MaxImageBytes
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := r.cli.ImagePull(ctx, ref, client.ImagePullOptions{RegistryAuth: r.pullAuth(ref)})
	if err != nil {
		return err
	}
	defer resp.Close()
	layers := map[string]int64{}
	var announced int64
	done := r.pulls.start(ref)
	defer done()
	for m, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return err
		}
		if m.Error != nil {
			return fmt.Errorf("%s", m.Error.Message)
		}
		if m.ID != "" && m.Progress != nil {
			r.pulls.layer(ref, m.ID, m.Status, m.Progress.Current, m.Progress.Total)
		}
		if limit <= 0 || m.ID == "" || m.Progress == nil || m.Progress.Total <= 0 {
			continue
		}
		if m.Status != "Downloading" {
			continue
		}
		if prev, seen := layers[m.ID]; !seen || prev != m.Progress.Total {
			announced += m.Progress.Total - prev
			layers[m.ID] = m.Progress.Total
		}
		if announced > limit {
			r.log.Warn("image pull cut off: over the size limit", "image", ref, "announced_bytes", announced, "limit_bytes", limit)
			return &imageTooLarge{ref: ref, bytes: announced, limit: limit, announced: true}
		}
	}
	if limit <= 0 {
		return nil
	}
	img, err := r.cli.ImageInspect(ctx, ref)
	if err != nil {
		return wrap(err, "look up the pulled image %s", ref)
	}
	if img.Size <= limit {
		return nil
	}
	r.log.Warn("pulled image over the size limit: removing it", "image", ref, "bytes", img.Size, "limit_bytes", limit)
	if _, err := r.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		r.log.Warn("could not remove the oversized image", "image", ref, "err", err)
	}
	return &imageTooLarge{ref: ref, bytes: img.Size, limit: limit}
}
