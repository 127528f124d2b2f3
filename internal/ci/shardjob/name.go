package shardjob

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/internal/shard"
)

// Prefixes of a sharded run's artifact names.
const (
	// planPrefix starts the planned run's artifact name,
	// proofgate-plan-<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>.
	planPrefix = "proofgate-plan-"
	// shardPrefix starts a shard's artifact name,
	// proofgate-shard-<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>-<I>-of-<N>.
	shardPrefix = "proofgate-shard-"
)

// PlanArtifactName is the planned run's artifact of workflow run runID,
// attempt.
func PlanArtifactName(runID int64, attempt int) string {
	return fmt.Sprintf("%s%d-%d", planPrefix, runID, attempt)
}

// ShardArtifactName is shard s's artifact of workflow run runID, attempt.
func ShardArtifactName(runID int64, attempt int, s shard.Spec) string {
	return fmt.Sprintf("%s%d-%d-%d-of-%d", shardPrefix, runID, attempt, s.Index, s.Count)
}

// parseShardArtifactName returns the spec of a shard artifact of runID and
// attempt; ok is false for any other name (another run's, another
// attempt's, not a shard's, or not canonical).
func parseShardArtifactName(name string, runID int64, attempt int) (shard.Spec, bool) {
	rest, ok := strings.CutPrefix(name, fmt.Sprintf("%s%d-%d-", shardPrefix, runID, attempt))
	if !ok {
		return shard.Spec{}, false
	}
	is, ns, ok := strings.Cut(rest, "-of-")
	if !ok {
		return shard.Spec{}, false
	}
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	s := shard.Spec{Index: i, Count: n}
	if err1 != nil || err2 != nil || i < 1 || i > n || n > shard.MaxShards || ShardArtifactName(runID, attempt, s) != name {
		return shard.Spec{}, false
	}
	return s, true
}
