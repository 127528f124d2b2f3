// Command helper is the single static binary inside ProofGate's test image.
// Each subcommand exercises one thing a sandbox must allow or refuse; the
// exit status reports whether the attempt succeeded (0) or failed (1), and a
// one-line explanation goes to stdout so tests can assert on it.
//
//	helper true | exit N | sleep SECONDS
//	helper out N | err N            write N bytes to stdout / stderr
//	helper alloc MIB                allocate and touch MIB MiB
//	helper forkbomb                 spawn sleeping children until refused
//	helper connect ADDR             TCP dial (2 s)
//	helper fetch ADDR PATH          TCP dial (2 s), read up to 1 MiB, write it to PATH
//	helper lookup NAME              DNS lookup
//	helper write PATH [BYTES]       create PATH with BYTES bytes (default 1)
//	helper cat PATH                 copy PATH to stdout
//	helper env                      environment as a JSON object
//	helper id                       uid/gid/euid/egid
//	helper fill PATH BYTES          write up to BYTES into PATH, print how many made it, exit 0 anyway
//	helper stat PATH                mode (octal, with setuid/setgid/sticky), uid, gid of PATH
//	helper mtime PATH...            each PATH's modification time (Unix nanoseconds, symlinks not followed), one a line
//	helper exec PATH ARGS...        execve PATH
//	helper tree DIR FILES BYTES     create FILES files of BYTES bytes in all under DIR (100 per directory)
//	helper symlink TARGET PATH      create the symlink PATH -> TARGET
//	helper count DIR                print "files=N bytes=M" of the regular files under DIR
//	helper uniq DIR                 create a file with a name no other call uses in DIR
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: helper COMMAND [ARGS]")
	}
	cmd, args := os.Args[1], os.Args[2:]
	run, ok := modes[cmd]
	if !ok {
		fail("unknown command %q", cmd)
	}
	run(args)
}

// modes are the subcommands (see the package comment). A mode that returns
// exits 0.
var modes = map[string]func(args []string){
	"true":     func([]string) { os.Exit(0) },
	"exit":     func(args []string) { os.Exit(atoi(arg(args, 0))) },
	"sleep":    sleep,
	"out":      func(args []string) { writeN(os.Stdout, int64(atoi(arg(args, 0)))) },
	"err":      func(args []string) { writeN(os.Stderr, int64(atoi(arg(args, 0)))) },
	"alloc":    alloc,
	"forkbomb": func([]string) { forkbomb() },
	"connect":  connect,
	"fetch":    fetch,
	"lookup":   lookup,
	"write":    write,
	"cat":      cat,
	"env":      env,
	"id": func([]string) {
		fmt.Printf("uid=%d gid=%d euid=%d egid=%d\n", os.Getuid(), os.Getgid(), os.Geteuid(), os.Getegid())
	},
	"fill":  fill,
	"stat":  stat,
	"mtime": mtime,
	"exec":  execve,
	"tree":  tree,
	"symlink": func(args []string) {
		if err := os.Symlink(arg(args, 0), arg(args, 1)); err != nil {
			fail("symlink: %v", err)
		}
	},
	"link": func(args []string) {
		if err := os.Link(arg(args, 0), arg(args, 1)); err != nil {
			fail("link: %v", err)
		}
	},
	"count": count,
	"uniq": func(args []string) {
		p := fmt.Sprintf("%s/%d-%d", arg(args, 0), os.Getpid(), time.Now().UnixNano())
		if err := os.WriteFile(p, []byte("u"), 0o644); err != nil {
			fail("uniq: %v", err)
		}
		fmt.Println("wrote", p)
	},
}

// tree writes a synthetic install: FILES files, BYTES bytes in all, 100
// per directory (DIR/d<k>/f<i>).
func tree(args []string) {
	dir, files, total := arg(args, 0), atoi(arg(args, 1)), int64(atoi(arg(args, 2)))
	per := int64(0)
	if files > 0 {
		per = total / int64(files)
	}
	for i := 0; i < files; i++ {
		d := fmt.Sprintf("%s/d%d", dir, i/100)
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				fail("tree: %v", err)
			}
		}
		f, err := os.Create(fmt.Sprintf("%s/f%d", d, i))
		if err != nil {
			fail("tree: %v", err)
		}
		writeN(f, per)
		if err := f.Close(); err != nil {
			fail("tree: %v", err)
		}
	}
	fmt.Printf("tree files=%d bytes=%d\n", files, per*int64(files))
}

// count walks DIR (no symlink followed) and prints its regular files.
func count(args []string) {
	var files, bytes int64
	var walk func(string)
	walk = func(d string) {
		ents, err := os.ReadDir(d)
		if err != nil {
			fail("count: %v", err)
		}
		for _, e := range ents {
			p := d + "/" + e.Name()
			switch {
			case e.IsDir():
				walk(p)
			case e.Type().IsRegular():
				fi, err := e.Info()
				if err != nil {
					fail("count: %v", err)
				}
				files, bytes = files+1, bytes+fi.Size()
			}
		}
	}
	walk(arg(args, 0))
	fmt.Printf("files=%d bytes=%d\n", files, bytes)
}

func sleep(args []string) {
	d, err := strconv.ParseFloat(arg(args, 0), 64)
	if err != nil {
		fail("sleep: %v", err)
	}
	time.Sleep(time.Duration(d * float64(time.Second)))
}

func alloc(args []string) {
	mib := atoi(arg(args, 0))
	if len(args) > 1 {
		// alloc MIB DELAY: run DELAY before ballooning, as a real
		// process does (see TestMemoryBalloonIsOOM).
		d, err := time.ParseDuration(args[1])
		if err != nil {
			fail("alloc: %v", err)
		}
		time.Sleep(d)
	}
	var keep [][]byte
	for i := 0; i < mib; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	fmt.Printf("allocated %d MiB\n", len(keep))
}

func connect(args []string) {
	c, err := net.DialTimeout("tcp", arg(args, 0), 2*time.Second)
	if err != nil {
		fail("connect: %v", err)
	}
	c.Close()
	fmt.Println("connected")
}

func fetch(args []string) {
	c, err := net.DialTimeout("tcp", arg(args, 0), 2*time.Second)
	if err != nil {
		fail("fetch: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(io.LimitReader(c, 1<<20))
	if err != nil {
		fail("fetch: %v", err)
	}
	if err := os.WriteFile(arg(args, 1), b, 0o644); err != nil {
		fail("fetch: %v", err)
	}
	fmt.Println("fetched", len(b), "bytes")
}

func lookup(args []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, arg(args, 0))
	if err != nil {
		fail("lookup: %v", err)
	}
	fmt.Println("resolved", strings.Join(addrs, ","))
}

func write(args []string) {
	n := 1
	if len(args) > 1 {
		n = atoi(args[1])
	}
	f, err := os.OpenFile(arg(args, 0), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		fail("write: %v", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	writeN(bw, int64(n))
	if err := bw.Flush(); err != nil {
		fail("write: %v", err)
	}
	if err := f.Close(); err != nil {
		fail("write: %v", err)
	}
	fmt.Println("wrote", n)
}

func cat(args []string) {
	f, err := os.Open(arg(args, 0))
	if err != nil {
		fail("cat: %v", err)
	}
	if _, err := io.Copy(os.Stdout, f); err != nil {
		fail("cat: %v", err)
	}
}

func env([]string) {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	b, _ := json.Marshal(m)
	fmt.Println(string(b))
}

func fill(args []string) {
	f, err := os.OpenFile(arg(args, 0), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		fmt.Printf("filled 0: %v\n", err)
		return
	}
	buf := make([]byte, 1<<20)
	var n int64
	for want := int64(atoi(arg(args, 1))); n < want; {
		k, err := f.Write(buf[:min(int64(len(buf)), want-n)])
		n += int64(k)
		if err != nil {
			fmt.Printf("filled %d: %v\n", n, err)
			return
		}
	}
	fmt.Printf("filled %d\n", n)
}

func stat(args []string) {
	var st syscall.Stat_t
	if err := syscall.Lstat(arg(args, 0), &st); err != nil {
		fail("stat: %v", err)
	}
	fmt.Printf("mode=%04o uid=%d gid=%d\n", st.Mode&0o7777, st.Uid, st.Gid)
}

func mtime(args []string) {
	for _, p := range args {
		fi, err := os.Lstat(p)
		if err != nil {
			fail("mtime: %v", err)
		}
		fmt.Printf("%s %d\n", p, fi.ModTime().UnixNano())
	}
}

func execve(args []string) {
	p := arg(args, 0)
	if err := syscall.Exec(p, args, os.Environ()); err != nil {
		fail("exec: %v", err)
	}
}

// forkbomb starts children that sleep, as fast as it can, until the kernel
// refuses 200 times; then it reports how many it got and exits 3. Children
// are never reaped: the container's death takes them.
func forkbomb() {
	self, err := os.Executable()
	if err != nil {
		self = "/proc/self/exe"
	}
	started, refused := 0, 0
	var last error
	for refused < 200 && started < 100000 {
		c := exec.Command(self, "sleep", "600")
		if err := c.Start(); err != nil {
			refused++
			last = err
			continue
		}
		started++
	}
	fmt.Printf("forkbomb started=%d refused=%d last=%v\n", started, refused, last)
	os.Exit(3)
}

func writeN(w io.Writer, n int64) {
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = 'a' + byte(i%26)
	}
	for n > 0 {
		k := int64(len(buf))
		if n < k {
			k = n
		}
		if _, err := w.Write(buf[:k]); err != nil {
			os.Exit(1)
		}
		n -= k
	}
}

func arg(args []string, i int) string {
	if i >= len(args) {
		fail("missing argument %d", i+1)
	}
	return args[i]
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("bad number %q", s)
	}
	return n
}

func fail(format string, a ...any) {
	fmt.Printf(format+"\n", a...)
	os.Exit(1)
}
