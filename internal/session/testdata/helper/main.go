// Command helper is a test fixture for internal/session: each mode is one
// tool behaviour, run as a real process.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "hello": // print a greeting of args[0]
		fmt.Printf("hello %s\n", args[0])
	case "slow": // print a line every 50 ms, args[0] times
		n, _ := strconv.Atoi(args[0])
		for i := range n {
			fmt.Printf("step %d\n", i)
			time.Sleep(50 * time.Millisecond)
		}
	case "true":
	case "exit": // exit with code args[0]
		n, _ := strconv.Atoi(args[0])
		fmt.Fprintln(os.Stderr, "failing")
		os.Exit(n)
	case "env": // print TRACEPARENT and TRACESTATE
		fmt.Printf("%s\n%s\n", os.Getenv("TRACEPARENT"), os.Getenv("TRACESTATE"))
	case "trap": // ignore SIGTERM and sleep
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Minute)
	case "late": // start a worker that outlives this process, write args[0]/started, wait for it
		w := exec.Command(os.Args[0], "late-worker", args[0], args[1])
		if err := w.Start(); err != nil {
			os.Exit(3)
		}
		if err := os.WriteFile(filepath.Join(args[0], "started"), []byte(strconv.Itoa(w.Process.Pid)+"\n"), 0o644); err != nil {
			os.Exit(3)
		}
		_ = w.Wait()
	case "late-worker": // ignore SIGTERM, sleep args[1] seconds, then write args[0]/marker
		signal.Ignore(syscall.SIGTERM)
		n, _ := strconv.Atoi(args[1])
		time.Sleep(time.Duration(n) * time.Second)
		_ = os.WriteFile(filepath.Join(args[0], "marker"), []byte("the tool ran to its end\n"), 0o644)
	case "flood": // write args[0] bytes to stdout
		n, _ := strconv.Atoi(args[0])
		buf := make([]byte, 64<<10)
		for i := range buf {
			buf[i] = 'x'
		}
		for n > 0 {
			k := min(n, len(buf))
			if _, err := os.Stdout.Write(buf[:k]); err != nil {
				os.Exit(3)
			}
			n -= k
		}
	default:
		os.Exit(2)
	}
}
