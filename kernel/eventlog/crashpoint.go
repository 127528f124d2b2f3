package eventlog

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CrashEnv names the crash-test hook: PROOFGATE_TEST_CRASH=<when>:<n> makes
// the process kill itself (SIGKILL) at its n-th event (Append, or Stage
// when its batch is flushed), counted from 1 across every log it writes.
// <when> is "before" (nothing of it written; the events staged before it
// in the same batch written and fsynced), "torn" (and the first half of
// its line, no '\n') or "after" (through its line, fsynced, before Append
// or Flush returns). It exists so
// that tests can kill real processes at every append boundary
// deterministically. "seal<k>:<n>" (k in 1-4) kills it after step k of
// its n-th seal of an active file into a segment (see Log.sealLocked).
// The hook is read only in a test binary (testing.Testing): in the
// release binary, and any other program, the variable does nothing, so
// no environment can stop a production writer at a chosen write boundary
// (TestCrashHookInertOutsideTests).
const CrashEnv = "PROOFGATE_TEST_CRASH"

// Crash points.
const (
	crashNone = iota
	crashBefore
	crashTorn
	crashAfter
)

var crash struct {
	once  sync.Once
	when  int
	at    int64
	count atomic.Int64
	seal  int // the seal step to die after, 0 for none
	seals atomic.Int64
}

// crashPoint returns the crash point for the current Append.
func crashPoint() int {
	parseCrash()
	if crash.when == crashNone || crash.count.Add(1) != crash.at {
		return crashNone
	}
	return crash.when
}

func parseCrash() {
	crash.once.Do(func() {
		v, ok := os.LookupEnv(CrashEnv)
		if !ok || !testing.Testing() {
			return
		}
		when, n, _ := strings.Cut(v, ":")
		at, err := strconv.ParseInt(n, 10, 64)
		if err != nil || at < 1 {
			return
		}
		switch when {
		case "seal1", "seal2", "seal3", "seal4":
			crash.seal, crash.at = int(when[4]-'0'), at
			return
		case "before":
			crash.when = crashBefore
		case "torn":
			crash.when = crashTorn
		case "after":
			crash.when = crashAfter
		default:
			return
		}
		crash.at = at
	})
}

// sealCrash kills the process after step k of this process's n-th seal
// when the crash hook says so.
func sealCrash(k int, n int64) {
	parseCrash()
	if crash.seal == k && n == crash.at {
		die()
	}
}

// die kills the process without running deferred functions or exit hooks,
// as kill -9 from outside would.
func die() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
	for { // the signal may arrive after Kill returns
		time.Sleep(time.Second)
	}
}
