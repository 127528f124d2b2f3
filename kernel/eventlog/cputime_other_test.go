//go:build !unix

package eventlog

import "time"

// cpuTime is not measured here: the cpu-ms metric reads 0.
func cpuTime() time.Duration { return 0 }
