// Command helper is a test fixture for the process runtime: each mode
// exercises one behaviour with real processes.
package main

import (
	"encoding/json"
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
	case "tree": // tree DIR: see tree
		tree(args[0])
	case "write": // write DIR NAME: write DIR/NAME.pid, then append to DIR/NAME.log every 10ms forever
		write(args[0], args[1])
	case "detach": // detach DIR NAME: start "write DIR NAME" in a new session and exit at once (the middle of a double fork)
		c := exec.Command(os.Args[0], "write", args[0], args[1])
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
	case "selfkill": // die of SIGKILL sent by itself
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	default:
		fmt.Fprintln(os.Stderr, "helper: unknown mode", os.Args[1])
		os.Exit(2)
	}
}

// tree makes DIR/<n> (the first n that does not exist yet) and starts in it a
// writer in its own process group ("group"), a writer that a double fork
// and setsid took out of the group and session ("escaped"), then writes
// main.pid, creates "ready" and writes main.log itself, forever. Every
// writer holds the check's stdout.
func tree(base string) {
	var dir string
	for n := 1; ; n++ {
		dir = filepath.Join(base, strconv.Itoa(n))
		if err := os.MkdirAll(base, 0o755); err != nil {
			fail(err)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) {
			fail(err)
		}
	}
	group := exec.Command(os.Args[0], "write", dir, "group")
	group.Stdout, group.Stderr = os.Stdout, os.Stderr
	if err := group.Start(); err != nil {
		fail(err)
	}
	detach := exec.Command(os.Args[0], "detach", dir, "escaped")
	detach.Stdout, detach.Stderr = os.Stdout, os.Stderr
	if err := detach.Run(); err != nil {
		fail(err)
	}
	for _, name := range []string{"group.pid", "escaped.pid"} {
		for {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	fmt.Println(dir)
	write(dir, "main")
}

// write records the pid in DIR/NAME.pid (atomically; for the main writer
// of a tree also DIR/ready) and appends a line to DIR/NAME.log every 10ms.
func write(dir, name string) {
	atomicWrite(filepath.Join(dir, name+".pid"), strconv.Itoa(os.Getpid())+"\n")
	if name == "main" {
		atomicWrite(filepath.Join(dir, "ready"), "")
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fail(err)
	}
	for {
		if _, err := f.WriteString(name + "\n"); err != nil {
			fail(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func atomicWrite(path, s string) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(4)
}
