package retention

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// PruningSuffix marks a blob being reclaimed: renamed, not yet deleted.
// Recover renames every such file back.
const PruningSuffix = ".pruning"

var hexRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// BlobPlan counts the blobs of the retained runs.
type BlobPlan struct {
	Total       int    `json:"total"`
	Reachable   int    `json:"reachable"`
	Young       int    `json:"young_kept"`
	InLocked    int    `json:"in_locked_runs_kept"`
	Reclaimable int    `json:"reclaimable"`
	Bytes       int64  `json:"reclaimable_bytes"`
	Skipped     string `json:"skipped,omitempty"` // why no blob is reclaimed at all
	candidates  []blobFile
}

type blobFile struct {
	run    string
	path   string
	digest string
	size   int64
}

// reachable is every blob digest an event of a retained run or an archive
// names.
func reachable(runs []RunPlan) map[string]bool {
	set := map[string]bool{}
	for _, rp := range runs {
		for _, d := range rp.blobs {
			set[d] = true
		}
	}
	return set
}

// planBlobs finds the reclaimable blobs in the directories of runs that
// stay in place (the ones being archived take all their files along).
func planBlobs(stateDir string, runs []RunPlan, s Settings, now time.Time) BlobPlan {
	var bp BlobPlan
	for _, rp := range runs {
		if rp.unreadable {
			bp.Skipped = fmt.Sprintf("run %s cannot be read, so the blobs it names are unknown", rp.Run)
			break
		}
	}
	set := reachable(runs)
	for _, rp := range runs {
		if rp.Archived || rp.Decision == Archive {
			continue
		}
		files, err := listBlobs(filepath.Join(stateDir, RunsDir, rp.Run))
		if err != nil {
			bp.Skipped = fmt.Sprintf("run %s: %v", rp.Run, err)
			continue
		}
		for _, b := range files {
			bp.Total++
			switch {
			case set[b.digest]:
				bp.Reachable++
			case rp.locked:
				bp.InLocked++
			case now.Sub(b.mtime) < s.BlobMinAge.Value:
				bp.Young++
			default:
				bp.Reclaimable++
				bp.Bytes += b.size
				bp.candidates = append(bp.candidates, blobFile{run: rp.Run, path: b.path, digest: b.digest, size: b.size})
			}
		}
	}
	if bp.Skipped != "" {
		bp.Reclaimable, bp.Bytes, bp.candidates = 0, 0, nil
	}
	return bp
}

type listedBlob struct {
	path, digest string
	size         int64
	mtime        time.Time
}

// listBlobs lists runDir/blobs/sha256/<hex>.
func listBlobs(runDir string) ([]listedBlob, error) {
	dir := filepath.Join(runDir, "blobs", "sha256")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []listedBlob
	for _, e := range ents {
		if !e.Type().IsRegular() || !hexRE.MatchString(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, listedBlob{path: filepath.Join(dir, e.Name()), digest: "sha256:" + e.Name(), size: info.Size(), mtime: info.ModTime()})
	}
	return out, nil
}

// reclaim renames every candidate to <name>.pruning, waits settle, rescans
// the state (rescan returns the digests named now), restores any name that
// became reachable and deletes the rest.
func reclaim(ctx context.Context, cands []blobFile, settle time.Duration, rescan func() (map[string]bool, error)) (reclaimed, restored int, bytes int64, err error) {
	var moved []blobFile
	defer func() {
		if err != nil {
			for _, b := range moved {
				restoreBlob(b.path + PruningSuffix)
			}
		}
	}()
	for _, b := range cands {
		if err := os.Rename(b.path, b.path+PruningSuffix); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return 0, 0, 0, err
		}
		moved = append(moved, b)
	}
	t := time.NewTimer(settle)
	select {
	case <-ctx.Done():
		t.Stop()
		return 0, 0, 0, ctx.Err()
	case <-t.C:
	}
	set, err := rescan()
	if err != nil {
		return 0, 0, 0, err
	}
	for _, b := range moved {
		if set[b.digest] || set["run:"+b.run] {
			restoreBlob(b.path + PruningSuffix)
			restored++
			continue
		}
		if err := os.Remove(b.path + PruningSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return reclaimed, restored, bytes, err
		}
		reclaimed++
		bytes += b.size
	}
	moved = nil
	return reclaimed, restored, bytes, nil
}

// restoreBlob renames a .pruning file back to its name; when a writer
// stored the same blob meanwhile, the copy is dropped (same digest).
func restoreBlob(p string) {
	orig := strings.TrimSuffix(p, PruningSuffix)
	if err := os.Link(p, orig); err != nil && !errors.Is(err, os.ErrExist) {
		return
	}
	os.Remove(p)
}
