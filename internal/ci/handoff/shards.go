package handoff

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/proofgate/proofgate/kernel/replay"
)

// readMergedShards adds a merged run's shard files (shards/<i>/: the shard
// log, shard.json and its signature files, replay.ShardFiles) in dir to mem,
// so that a hand-off of a merged run carries what its replay checks. A run
// that was not merged has no shards/ and adds nothing.
func readMergedShards(dir string, mem map[string][]byte) error {
	ents, err := os.ReadDir(filepath.Join(dir, replay.ShardDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ents) > replay.MaxShards {
		return fmt.Errorf("%s: %d entries, at most %d shards", replay.ShardDir, len(ents), replay.MaxShards)
	}
	var total int64
	for _, e := range ents {
		i, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() || strconv.Itoa(i) != e.Name() || i < 1 {
			return fmt.Errorf("%s/%s is not a merged shard", replay.ShardDir, e.Name())
		}
		for _, n := range replay.ShardFiles(i) {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(n)))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if total += int64(len(b)); total > MaxArtifactBytes {
				return fmt.Errorf("%s: over %d bytes", replay.ShardDir, MaxArtifactBytes)
			}
			mem[n] = b
		}
	}
	return nil
}
