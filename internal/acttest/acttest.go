// Package acttest runs nektos/act's own artifact server (scripts/actart,
// act v0.2.87's pkg/artifacts, built by scripts/act-artifacts-up.sh) on
// 127.0.0.1 for tests: the v4 artifact service a workflow gets under act,
// which keeps only Put Block bodies (appended in arrival order), answers a
// plain Put Blob with 200, accepts any hash at Finalize and lists an
// artifact's size as its directory's.
package acttest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RunID is the workflow run (and job) backend id of Start's token.
const RunID = "42"

// Start starts act's artifact server on 127.0.0.1 for the test and
// returns its results URL (ACTIONS_RESULTS_URL), its storage directory
// (artifact name lives in dir/RunID/name/name.zip) and act's runtime token
// for run RunID. Without PROOFGATE_ACT_ARTIFACTS (the binary) the test is
// skipped, or fails under PROOFGATE_REQUIRE_ACT=1 (as scripts/test.sh sets).
func Start(t testing.TB) (results, dir, token string) {
	bin := os.Getenv("PROOFGATE_ACT_ARTIFACTS")
	if bin == "" {
		if os.Getenv("PROOFGATE_REQUIRE_ACT") == "1" {
			t.Fatal("PROOFGATE_REQUIRE_ACT=1 but PROOFGATE_ACT_ARTIFACTS is unset (bash scripts/act-artifacts-up.sh)")
		}
		t.Skip("PROOFGATE_ACT_ARTIFACTS unset: act's artifact server not built")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	dir = t.TempDir()
	cmd := exec.Command(bin, dir, port)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("act's token: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("act's artifact server did not listen")
		}
	}
	return "http://127.0.0.1:" + port + "/", dir, strings.TrimSpace(line)
}
