package action

import (
	"regexp"
	"strings"
	"testing"
)

// A long check shows heartbeat lines in the job log while it runs, and
// every check a line as it finishes; a bad interval is a usage error.
func TestHeartbeatInLog(t *testing.T) {
	c := strings.Replace(processContract, "    run: [test, -f, README.md]", "    run: [sh, -c, 'test -f README.md && printf ok && sleep 1.2']", 1)
	fx := newFixture(t, c, nil)
	fx.prEvent()
	fx.env["PROOFGATE_HEARTBEAT"] = "400ms"
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	log := fx.log.String()
	if n := len(regexp.MustCompile(`(?m)^running readme +[0-9.]+m?s, 2 bytes of output$`).FindAllString(log, -1)); n < 2 {
		t.Fatalf("%d heartbeat lines for a 1.2 s check at 400ms:\n%s", n, log)
	}
	for _, want := range []string{"passed  readme", "passed  guard"} {
		if !strings.Contains(log, want) {
			t.Fatalf("no %q line:\n%s", want, log)
		}
	}

	fx = newFixture(t, processContract, nil)
	fx.prEvent()
	fx.env["PROOFGATE_HEARTBEAT"] = "forever"
	res, err = fx.run()
	mustCode(t, res.Code, ExitUsage, err, fx.log.String())
	if err == nil || !strings.Contains(err.Error(), "PROOFGATE_HEARTBEAT") {
		t.Fatalf("bad interval: %v", err)
	}
}
