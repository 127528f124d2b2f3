package contract

// Benchmark binds a contract's runs to one task of one suite of the
// benchmark manifest (internal/bench): `benchmark: {suite, task}`. The ids
// use the check-id syntax; whether the manifest declares them is checked by
// `proofgate benchmark report`, which reads the manifest.
type Benchmark struct {
	Suite string `json:"suite"`
	Task  string `json:"task"`
}

type rawBenchmark struct {
	Suite string `json:"suite"`
	Task  string `json:"task"`
}

// resolveBenchmark copies the binding; the schema has checked both ids.
func (p *parser) resolveBenchmark(raw *rawBenchmark) (*Benchmark, error) {
	if raw == nil {
		return nil, nil
	}
	if raw.Suite == "" || raw.Task == "" {
		return nil, p.errf("benchmark", "suite and task are both required")
	}
	return &Benchmark{Suite: raw.Suite, Task: raw.Task}, nil
}
