package docker

import (
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

func trivial(b *testing.B, r *Runtime, ref string) {
	spec := helperSpec(ref, "true")
	res := r.Run(b.Context(), spec, runtime.NewCapture(io.Discard, 1<<20), runtime.NewCapture(io.Discard, 1<<20))
	if res.Outcome != runtime.Passed {
		b.Fatalf("%+v", res)
	}
}

// BenchmarkTrivialCheckVsCLI runs, interleaved in each iteration, one
// trivial check through the provider and one `docker run --rm --network none`
// of the same image through the CLI, and reports both per-check times and
// their ratio.
func BenchmarkTrivialCheckVsCLI(b *testing.B) {
	r, ref := sandbox(b)
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("docker CLI absent")
	}
	var prov, cli time.Duration
	for b.Loop() {
		t0 := time.Now()
		trivial(b, r, ref)
		t1 := time.Now()
		if out, err := exec.Command(docker, "run", "--rm", "--network", "none", ref, "/bin/helper", "true").CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		prov += t1.Sub(t0)
		cli += time.Since(t1)
	}
	b.ReportMetric(float64(prov.Nanoseconds())/float64(b.N), "provider-ns/check")
	b.ReportMetric(float64(cli.Nanoseconds())/float64(b.N), "cli-ns/check")
	b.ReportMetric(float64(prov)/float64(cli), "provider/cli")
}

// BenchmarkTwentyChecksJobs2VsSerial runs 20 trivial checks two at a time
// and then one at a time, per iteration, and reports both and the ratio.
func BenchmarkTwentyChecksJobs2VsSerial(b *testing.B) {
	r, ref := sandbox(b)
	var par, ser time.Duration
	for b.Loop() {
		t0 := time.Now()
		jobs := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for range jobs {
					trivial(b, r, ref)
				}
			})
		}
		for range 20 {
			jobs <- struct{}{}
		}
		close(jobs)
		wg.Wait()
		t1 := time.Now()
		for range 20 {
			trivial(b, r, ref)
		}
		par += t1.Sub(t0)
		ser += time.Since(t1)
	}
	b.ReportMetric(float64(par.Nanoseconds())/float64(b.N), "jobs2-ns/20checks")
	b.ReportMetric(float64(ser.Nanoseconds())/float64(b.N), "jobs1-ns/20checks")
	b.ReportMetric(float64(par)/float64(ser), "jobs2/jobs1")
}
