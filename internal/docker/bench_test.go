package docker

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

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
// their ratio: for network none in its own namespace (the default) and in
// Docker's none sandbox (the fallback inside a container action).
func BenchmarkTrivialCheckVsCLI(b *testing.B) {
	shared, ref := sandbox(b)
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("docker CLI absent")
	}
	fallback := *shared
	fallback.hostsFile = ""
	for _, c := range []struct {
		name string
		r    *Runtime
	}{{"private-netns", shared}, {"docker-none", &fallback}} {
		b.Run(c.name, func(b *testing.B) {
			var prov, cli time.Duration
			for b.Loop() {
				t0 := time.Now()
				trivial(b, c.r, ref)
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
		})
	}
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

// apiStats times every Engine API request (to its response header) by
// endpoint, with ids and the version prefix folded.
type apiStats struct {
	mu sync.Mutex
	n  map[string]int
	d  map[string]time.Duration
}

var apiPathFold = regexp.MustCompile(`/v1\.[0-9]+|/[0-9a-f]{64}|/images/.+/json$`)

func (s *apiStats) reset() {
	s.mu.Lock()
	s.n, s.d = map[string]int{}, map[string]time.Duration{}
	s.mu.Unlock()
}

func (s *apiStats) option() Option {
	return WithClientOptions(
		client.WithHTTPRequestHook(func(r *http.Request) error {
			r.Header.Set("X-Proofgate-Bench-T0", strconv.FormatInt(time.Now().UnixNano(), 10))
			return nil
		}),
		client.WithHTTPResponseHook(func(r *http.Response) {
			t0, err := strconv.ParseInt(r.Request.Header.Get("X-Proofgate-Bench-T0"), 10, 64)
			if err != nil {
				return
			}
			path := apiPathFold.ReplaceAllStringFunc(r.Request.URL.Path, func(m string) string {
				if strings.HasPrefix(m, "/images/") {
					return "/images/{ref}/json"
				}
				if strings.HasPrefix(m, "/v1.") {
					return ""
				}
				return "/{id}"
			})
			k := r.Request.Method + " " + path
			s.mu.Lock()
			s.n[k]++
			s.d[k] += time.Duration(time.Now().UnixNano() - t0)
			s.mu.Unlock()
		}))
}

// cpuJiffies is the machine's busy CPU time (user+nice+system+irq+softirq)
// in clock ticks, from /proc/stat.
func cpuJiffies(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		tb.Skip("no /proc/stat")
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	var sum int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		sum += v
	}
	return sum
}

// BenchmarkAPICallsPerCheck runs 10 trivial checks one at a time and 10
// two at a time per iteration, and reports per Engine API endpoint the
// calls per check and the mean latency (ms) at each concurrency, plus the
// machine's busy CPU (ms of CPU per check, all processes: daemon, shims,
// runc and any other load). A latency that doubles at jobs 2 while CPU per
// check stays flat means the work is CPU-bound, not serialised by a lock.
func BenchmarkAPICallsPerCheck(b *testing.B) {
	_, ref := sandbox(b)
	stats := &apiStats{}
	stats.reset()
	r, err := New(context.Background(), stats.option())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	const checks = 10
	per := map[int]map[string][2]float64{1: {}, 2: {}}
	var cpu, wall [3]float64
	for b.Loop() {
		for _, jobs := range []int{1, 2} {
			stats.reset()
			c0, t0 := cpuJiffies(b), time.Now()
			work := make(chan struct{})
			var wg sync.WaitGroup
			for range jobs {
				wg.Go(func() {
					for range work {
						trivial(b, r, ref)
					}
				})
			}
			for range checks {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			wall[jobs] += float64(time.Since(t0).Milliseconds()) / checks
			cpu[jobs] += float64(cpuJiffies(b)-c0) * 10 / checks // 100 ticks/s
			stats.mu.Lock()
			for k, n := range stats.n {
				a := per[jobs][k]
				a[0] += float64(n) / checks
				a[1] += float64(stats.d[k].Microseconds()) / 1000 / float64(n)
				per[jobs][k] = a
			}
			stats.mu.Unlock()
		}
	}
	name := strings.NewReplacer("/containers/{id}/", "", "/containers/", "", "/images/{ref}/", "image-", " ", "-").Replace
	for jobs, m := range per {
		for k, a := range m {
			j := "-j" + strconv.Itoa(jobs)
			if jobs == 1 {
				b.ReportMetric(a[0]/float64(b.N), name(k)+"-calls/check")
			}
			b.ReportMetric(a[1]/float64(b.N), name(k)+j+"-ms")
		}
		b.ReportMetric(wall[jobs]/float64(b.N), "wall-j"+strconv.Itoa(jobs)+"-ms/check")
		b.ReportMetric(cpu[jobs]/float64(b.N), "cpu-j"+strconv.Itoa(jobs)+"-ms/check")
	}
}

// BenchmarkCopyModeCheck runs, interleaved in each iteration, a trivial
// copy-mode check of a cobra-sized workspace (300 files, 1.2 MiB in 10
// directories) through the provider, the same through the docker CLI
// (volume create, create, cp, start --attach, rm, volume rm: Docker's own
// cost of the same steps, without the hardening), and a bare `docker run
// --rm --network none` (Docker's container start alone), and reports the
// three per-check times in ms.
func BenchmarkCopyModeCheck(b *testing.B) {
	r, ref := sandbox(b)
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("docker CLI absent")
	}
	ws := b.TempDir()
	for i := range 300 {
		d := filepath.Join(ws, "d"+strconv.Itoa(i%10))
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, "f"+strconv.Itoa(i)), make([]byte, 4096), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	tarball := filepath.Join(b.TempDir(), "ws.tar")
	if out, err := exec.Command("tar", "-C", ws, "-cf", tarball, ".").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	sh := func(script string) {
		if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v %s", script, err, out)
		}
	}
	var prov, cli, run time.Duration
	for b.Loop() {
		t0 := time.Now()
		spec := helperSpec(ref, "true")
		spec.Workspace, spec.Sandbox.Workspace = ws, "copy"
		if res := r.Run(b.Context(), spec, runtime.NewCapture(io.Discard, 1<<20), runtime.NewCapture(io.Discard, 1<<20)); res.Outcome != runtime.Passed {
			b.Fatalf("%+v", res)
		}
		t1 := time.Now()
		v := newVolumeName()
		sh(fmt.Sprintf(`set -e; d=%[1]s; v=%[2]s
$d volume create --driver local --opt type=tmpfs --opt device=tmpfs --opt o=size=64m $v >/dev/null
c=$($d create --network none -v $v:/workspace %[3]s /bin/helper true)
$d cp - $c:/workspace < %[4]s
$d start --attach $c >/dev/null
$d rm $c >/dev/null; $d volume rm $v >/dev/null`, docker, v, ref, tarball))
		t2 := time.Now()
		sh(docker + " run --rm --network none " + ref + " /bin/helper true")
		prov += t1.Sub(t0)
		cli += t2.Sub(t1)
		run += time.Since(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(prov.Milliseconds())/n, "provider-ms/check")
	b.ReportMetric(float64(cli.Milliseconds())/n, "cli-copy-ms/check")
	b.ReportMetric(float64(run.Milliseconds())/n, "cli-run-ms/check")
}

// hashingCollector stores products as the kernel does: each hashed while
// written to a file.
type hashingCollector struct{ dir string }

func (h hashingCollector) Add(path string, size int64, r io.Reader) error {
	f, err := os.CreateTemp(h.dir, "product-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	hs := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, hs), r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: %d bytes, said %d", path, n, size)
	}
	return err
}

// BenchmarkProducts measures what reading a 64 MiB product out of a
// copy-mode sandbox adds to a check (ADR 0039), interleaving in each
// iteration: the check with and without produces through the provider
// (its collector hashes and writes the file, as the kernel's does), and
// Docker's own cost of the same read — `docker cp` of the file out of the
// exited container piped to sha256sum — as the difference between the CLI
// steps with and without it. It reports both added costs in ms and their
// ratio.
func BenchmarkProducts(b *testing.B) {
	r, ref := sandbox(b)
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("docker CLI absent")
	}
	const size = 64 << 20
	ws, store := b.TempDir(), b.TempDir()
	check := func(produces bool) {
		spec := helperSpec(ref, "write", "/workspace/app", strconv.Itoa(size))
		spec.Workspace, spec.Sandbox.Workspace, spec.Sandbox.WorkspaceSize = ws, "copy", 256<<20
		if produces {
			spec.Produces, spec.Collect = []string{"app"}, hashingCollector{store}
		}
		if res := r.Run(b.Context(), spec, runtime.NewCapture(io.Discard, 1<<20), runtime.NewCapture(io.Discard, 1<<20)); res.Outcome != runtime.Passed {
			b.Fatalf("%+v", res)
		}
	}
	cli := func(cp bool) {
		read := ""
		if cp {
			read = "$d cp $c:/workspace/app - | sha256sum >/dev/null"
		}
		script := fmt.Sprintf(`set -e; d=%[1]s; v=%[2]s
$d volume create $v >/dev/null
c=$($d create --network none -v $v:/workspace %[3]s /bin/helper write /workspace/app %[4]d)
$d start --attach $c >/dev/null
%[5]s
$d rm $c >/dev/null; $d volume rm $v >/dev/null`, docker, newVolumeName(), ref, size, read)
		if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
	}
	var with, without, cliWith, cliWithout time.Duration
	for b.Loop() {
		for _, step := range []struct {
			d   *time.Duration
			run func()
		}{{&with, func() { check(true) }}, {&without, func() { check(false) }}, {&cliWith, func() { cli(true) }}, {&cliWithout, func() { cli(false) }}} {
			t := time.Now()
			step.run()
			*step.d += time.Since(t)
		}
	}
	n := float64(b.N)
	added := float64((with - without).Milliseconds()) / n
	cliAdded := float64((cliWith - cliWithout).Milliseconds()) / n
	b.ReportMetric(added, "products-added-ms/check")
	b.ReportMetric(cliAdded, "docker-cp-sha256-added-ms")
	if cliAdded > 0 {
		b.ReportMetric(added/cliAdded, "ratio")
	}
}
