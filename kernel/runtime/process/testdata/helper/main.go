// Command helper is a test fixture for the process runtime: each mode
// exercises one behaviour with real processes.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "helper: mode required")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "argv": // print argv (after the mode) as JSON
		json.NewEncoder(os.Stdout).Encode(args)
	case "env": // print the environment as JSON
		json.NewEncoder(os.Stdout).Encode(os.Environ())
	case "pwd":
		wd, _ := os.Getwd()
		fmt.Println(wd)
	case "exit": // exit with the given code after writing to both streams
		fmt.Println("out")
		fmt.Fprintln(os.Stderr, "err")
		n, _ := strconv.Atoi(args[0])
		os.Exit(n)
	case "flood": // flood stream args[0] with args[1] bytes, then exit 0
		w := os.Stdout
		if args[0] == "stderr" {
			w = os.Stderr
		}
		n, _ := strconv.ParseInt(args[1], 10, 64)
		buf := make([]byte, 64<<10)
		for i := range buf {
			buf[i] = 'x'
		}
		for n > 0 {
			k := min(n, int64(len(buf)))
			if _, err := w.Write(buf[:k]); err != nil {
				os.Exit(3)
			}
			n -= k
		}
	case "sleep":
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
	case "ignore-term-sleep": // ignore SIGTERM and sleep
		signal.Ignore(syscall.SIGTERM)
		fmt.Println(os.Getpid())
		time.Sleep(time.Hour)
	case "spawn-ignoring": // ignore SIGTERM, start a child that ignores it too, print its pid, wait
		signal.Ignore(syscall.SIGTERM)
		c := exec.Command(os.Args[0], "ignore-term-sleep")
		c.Stderr = os.Stderr
		out, _ := c.StdoutPipe()
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		var pid int
		fmt.Fscan(out, &pid)
		fmt.Println(pid)
		c.Wait()
	case "orphan": // start a grandchild that holds stdout, print its pid, exit 0 at once
		c := exec.Command(os.Args[0], "sleep", "1h")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if len(args) > 0 && args[0] == "setsid" {
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		fmt.Println(c.Process.Pid)
	case "selfkill": // die of SIGKILL sent by itself
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	default:
		fmt.Fprintln(os.Stderr, "helper: unknown mode", os.Args[1])
		os.Exit(2)
	}
}
