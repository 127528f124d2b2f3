package run

import "github.com/proofgate/proofgate/kernel/replay"

// The replay, the report types, the lifecycle and the event types live in
// kernel/replay (the verification side: no lock, no git, no runtime
// provider); callers name them there. Audit is the writer side's: it
// opens an archived run too.

// Audit is replay.Audit of the run in dir, or of its verified archive
// when the run is archived (ReadDir).
func Audit(dir string) (*replay.Report, error) {
	rd, _, done, err := readable(dir)
	if err != nil {
		return nil, err
	}
	defer done()
	return replay.Audit(rd)
}
