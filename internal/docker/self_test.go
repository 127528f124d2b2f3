package docker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

const (
	idA = "0182a71184d945b1ad5040eb32577093782f53862c63f92a4a8304d7b5d955f2"
	idB = "9f3c0c2a1b4e5d6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7"
)

// mountinfoHostNet is /proc/self/mountinfo of a container run with
// --network host --hostname foo on this machine's daemon (Docker root on the
// root filesystem), with a workspace and the socket bind-mounted.
const mountinfoHostNet = `73 48 0:38 / / rw,relatime master:2 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/MA2GBAOWFCKLPVUISKVEFZNIOD:/var/lib/docker/overlay2/l/2YJU2DKUPPSTOU2TW2S5UME27R,upperdir=/var/lib/docker/overlay2/efb1/diff,workdir=/var/lib/docker/overlay2/efb1/work
74 73 0:41 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
75 73 0:42 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
78 77 0:44 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755
79 78 0:28 /docker/` + idA + ` /sys/fs/cgroup/cpu ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpu
90 73 254:0 /var/lib/docker/containers/` + idA + `/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/vda rw,discard
91 73 254:0 /var/lib/docker/containers/` + idA + `/hostname /etc/hostname rw,relatime - ext4 /dev/vda rw,discard
92 73 254:0 /var/lib/docker/containers/` + idA + `/hosts /etc/hosts rw,relatime - ext4 /dev/vda rw,discard
93 73 0:25 /docker.sock /run/docker.sock rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,size=814892k,mode=755
94 73 254:0 /home/runner/work/repo/repo /github/workspace rw,relatime - ext4 /dev/vda rw,discard
95 73 254:0 /home/runner/work/my\040dir /github/file\040commands rw,relatime - ext4 /dev/vda rw,discard
`

// mountinfoOwnFS is a runner whose Docker root is a filesystem of its own
// (the root field is relative to it) and with optional fields present.
const mountinfoOwnFS = `612 590 8:17 /containers/` + idB + `/resolv.conf /etc/resolv.conf rw,relatime shared:1 master:7 - xfs /dev/sdb1 rw,attr2
613 590 8:17 /containers/` + idB + `/hostname /etc/hostname rw,relatime shared:1 - xfs /dev/sdb1 rw,attr2
614 590 8:17 /containers/` + idB + `/hosts /etc/hosts rw,relatime - xfs /dev/sdb1 rw,attr2
615 590 8:1 /home/runner/work/_temp/_github_home /github/home rw,relatime - ext4 /dev/sda1 rw
`

func TestParseMountinfo(t *testing.T) {
	for _, c := range []struct {
		name   string
		in     string
		ids    []string
		points []string // must be present
	}{
		{"host network sample", mountinfoHostNet, []string{idA}, []string{"/", "/etc/hostname", "/github/workspace", "/github/file commands", "/run/docker.sock"}},
		{"docker root on its own filesystem", mountinfoOwnFS, []string{idB}, []string{"/github/home"}},
		{"custom docker root", "1 0 8:1 /srv/docker-data/containers/" + idA + "/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n", []string{idA}, nil},
		{"CRLF line", "1 0 8:1 /var/lib/docker/containers/" + idA + "/hosts /etc/hosts rw - ext4 /dev/sda1 rw\r\n", []string{idA}, nil},
		{"no trailing newline", "1 0 8:1 /var/lib/docker/containers/" + idA + "/hosts /etc/hosts rw - ext4 /dev/sda1 rw", []string{idA}, nil},
		{"two containers named: first wins", mountinfoOwnFS + mountinfoHostNet, []string{idB, idA}, nil},
		// Hostile and malformed input: no id must come out.
		{"host mount namespace", "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n25 22 0:5 / /dev rw - devtmpfs udev rw\n", nil, []string{"/", "/dev"}},
		{"file name does not match mount point", "1 0 8:1 /var/lib/docker/containers/" + idA + "/hostname /etc/hosts rw - ext4 /dev/sda1 rw\n", nil, nil},
		{"other mount point", "1 0 8:1 /var/lib/docker/containers/" + idA + "/hostname /etc/hostname.bak rw - ext4 /dev/sda1 rw\n", nil, nil},
		{"not under containers/", "1 0 8:1 /var/lib/docker/volumes/" + idA + "/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n", nil, nil},
		{"short id", "1 0 8:1 /var/lib/docker/containers/" + idA[:12] + "/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n", nil, nil},
		{"uppercase id", "1 0 8:1 /var/lib/docker/containers/" + strings.ToUpper(idA) + "/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n", nil, nil},
		{"65 hex", "1 0 8:1 /var/lib/docker/containers/" + idA + "f/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n", nil, nil},
		{"podman userdata", "1 0 8:1 /var/lib/containers/storage/overlay-containers/" + idA + "/userdata/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n", nil, nil},
		{"no separator", "1 0 8:1 /var/lib/docker/containers/" + idA + "/hostname /etc/hostname rw ext4 /dev/sda1 rw\n", nil, nil},
		{"separator without fstype", "1 0 8:1 /var/lib/docker/containers/" + idA + "/hostname /etc/hostname rw -\n", nil, nil},
		{"too few fields", "1 0 /var/lib/docker/containers/" + idA + "/hostname\n", nil, nil},
		{"relative root", "1 0 8:1 containers/" + idA + "/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n", nil, nil},
		{"octal escapes are decoded before matching", "1 0 8:1 /x\\057containers\\057" + idA + "\\057hostname /etc/hostname rw - ext4 /dev/sda1 rw\n", []string{idA}, nil},
		{"overlong line skipped", "1 0 8:1 /var/lib/docker/containers/" + idA + "/hostname /etc/hostname rw " + strings.Repeat("x", maxProcLine) + " - ext4 /dev/sda1 rw\n", nil, nil},
		{"overlong line does not hide the next", "1 0 8:1 / /a rw " + strings.Repeat("x", 3*maxProcLine) + " - ext4 /dev/sda1 rw\n1 0 8:1 /var/lib/docker/containers/" + idB + "/hosts /etc/hosts rw - ext4 /dev/sda1 rw\n", []string{idB}, []string{"/etc/hosts"}},
		{"empty", "", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			mi := parseMountinfo([]byte(c.in))
			if !slices.Equal(mi.ids, c.ids) {
				t.Fatalf("ids %v, want %v", mi.ids, c.ids)
			}
			for _, p := range c.points {
				if !mi.points[p] {
					t.Errorf("mount point %q missing from %v", p, mi.points)
				}
			}
		})
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	// Valid three-digit octal escapes are decoded; anything else is kept.
	if got := unescapeMountinfo(`/a\040b\011c\012d\134e\09x\1`); got != "/a b\tc\nd\\e\\09x\\1" {
		t.Fatalf("unescape: %q", got)
	}
}

func TestParseCgroup(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want []string
	}{
		{"cgroup v1 cgroupfs", "12:pids:/docker/" + idA + "\n11:memory:/docker/" + idA + "\n0::/docker/" + idA + "\n", []string{idA}},
		{"cgroup v2 systemd", "0::/system.slice/docker-" + idA + ".scope\n", []string{idA}},
		{"cgroup v1 systemd driver", "1:name=systemd:/system.slice/docker-" + idB + ".scope\n4:memory:/system.slice/docker-" + idB + ".scope\n", []string{idB}},
		{"docker in docker: deepest wins", "4:memory:/docker/" + idA + "/docker/" + idB + "\n", []string{idB}},
		{"kubepods with docker scope", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-pod1.slice/docker-" + idA + ".scope\n", []string{idA}},
		// No id.
		{"private cgroup namespace", "0::/\n", nil},
		{"this machine's sandbox", "4:memory:/process_api/45f2518f0b00d9f7fa987ff238abfb71\n0::/\n", nil},
		{"id not under docker", "4:memory:/other/" + idA + "\n", nil},
		{"short id", "4:memory:/docker/" + idA[:12] + "\n", nil},
		{"scope without id", "0::/system.slice/docker-.scope\n", nil},
		{"scope with bad id", "0::/system.slice/docker-" + strings.ToUpper(idA) + ".scope\n", nil},
		{"containerd scope", "0::/system.slice/cri-containerd-" + idA + ".scope\n", nil},
		{"missing fields", "docker/" + idA + "\n0:/docker/" + idA + "\n", nil},
		{"relative path", "4:memory:docker/" + idA + "\n", nil},
		{"overlong line", "4:memory:/docker/" + idA + "/" + strings.Repeat("a", maxProcLine) + "\n", nil},
		{"empty", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := parseCgroup([]byte(c.in)); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestParseBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3*maxProcLines; i++ {
		b.WriteString("1 0 8:1 / /m rw - ext4 /dev/sda1 rw\n")
	}
	b.WriteString("1 0 8:1 /var/lib/docker/containers/" + idA + "/hosts /etc/hosts rw - ext4 /dev/sda1 rw\n")
	if mi := parseMountinfo([]byte(b.String())); len(mi.ids) != 0 {
		t.Fatalf("a line past the line bound was parsed: %v", mi.ids)
	}
	var c strings.Builder
	for i := 0; i < 100; i++ {
		c.WriteString("0::/docker/" + strings.Repeat("0", 62) + string("0123456789abcdef"[i/16]) + string("0123456789abcdef"[i%16]) + "\n")
	}
	if ids := parseCgroup([]byte(c.String())); len(ids) != maxCandidate {
		t.Fatalf("%d candidates, want the bound %d", len(ids), maxCandidate)
	}
}

func TestSelfCandidatesOrder(t *testing.T) {
	mi := parseMountinfo([]byte(mountinfoHostNet))
	got := selfCandidates(mi, []byte("0::/docker/"+idB+"\n4:memory:/docker/"+idA+"\n"), "runner-host", true)
	want := []selfCandidate{{idA, "mountinfo"}, {idB, "cgroup"}, {"runner-host", "hostname"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := selfCandidates(mountinfo{}, nil, "runner-host", false); len(got) != 0 {
		t.Fatalf("hostname tried without a container sign: %v", got)
	}
}

func inspectResult(id, hostname string, running bool, mounts ...container.MountPoint) client.ContainerInspectResult {
	return client.ContainerInspectResult{Container: container.InspectResponse{
		ID: id, State: &container.State{Running: running}, Config: &container.Config{Hostname: hostname}, Mounts: mounts,
	}}
}

func TestVerifySelf(t *testing.T) {
	points := parseMountinfo([]byte(mountinfoHostNet)).points
	ws := container.MountPoint{Type: mount.TypeBind, Source: "/home/runner/work/repo/repo", Destination: "/github/workspace"}
	other := container.MountPoint{Type: mount.TypeBind, Source: "/srv/data", Destination: "/data"}
	tmpfs := container.MountPoint{Type: mount.TypeTmpfs, Destination: "/github/workspace"}
	for _, c := range []struct {
		name string
		c    selfCandidate
		ins  client.ContainerInspectResult
		want bool
	}{
		{"mountinfo id, workspace mount seen", selfCandidate{idA, "mountinfo"}, inspectResult(idA, "foo", true, other, ws), true},
		{"hostname, configured hostname matches", selfCandidate{"foo", "hostname"}, inspectResult(idA, "foo", true, ws), true},
		{"trailing slash in destination", selfCandidate{idA, "cgroup"}, inspectResult(idA, "x", true, container.MountPoint{Type: mount.TypeBind, Destination: "/github/workspace/"}), true},
		// Refused.
		{"not running", selfCandidate{idA, "mountinfo"}, inspectResult(idA, "foo", false, ws), false},
		{"no state", selfCandidate{idA, "mountinfo"}, client.ContainerInspectResult{Container: container.InspectResponse{ID: idA, Mounts: []container.MountPoint{ws}}}, false},
		{"id differs (prefix match by the daemon)", selfCandidate{idA, "mountinfo"}, inspectResult(idB, "foo", true, ws), false},
		{"another container named like our hostname", selfCandidate{"foo", "hostname"}, inspectResult(idB, "bar", true, ws), false},
		{"no config for hostname", selfCandidate{"foo", "hostname"}, client.ContainerInspectResult{Container: container.InspectResponse{ID: idB, State: &container.State{Running: true}, Mounts: []container.MountPoint{ws}}}, false},
		{"no mount of it is a mount point here", selfCandidate{idA, "mountinfo"}, inspectResult(idA, "foo", true, other), false},
		{"only a tmpfs at a seen destination", selfCandidate{idA, "mountinfo"}, inspectResult(idA, "foo", true, tmpfs), false},
		{"no mounts", selfCandidate{idA, "mountinfo"}, inspectResult(idA, "foo", true), false},
		{"relative destination", selfCandidate{idA, "mountinfo"}, inspectResult(idA, "foo", true, container.MountPoint{Type: mount.TypeBind, Destination: "github/workspace"}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := verifySelf(c.c, c.ins, points); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// fakeInspector answers ContainerInspect from a map; it stands in for the
// daemon only in the ordering test below (TestFindSelfRealDaemon uses the
// real one).
type fakeInspector map[string]client.ContainerInspectResult

func (f fakeInspector) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	if r, ok := f[id]; ok {
		return r, nil
	}
	return client.ContainerInspectResult{}, errors.New("no such container")
}

func TestFindSelfFallsThrough(t *testing.T) {
	ws := container.MountPoint{Type: mount.TypeBind, Source: "/host/ws", Destination: "/github/workspace"}
	mi := parseMountinfo([]byte(mountinfoHostNet))
	// The mountinfo id is gone (daemon does not know it), the cgroup id
	// is not running, the hostname names the right container.
	f := fakeInspector{
		idB:   inspectResult(idB, "x", false, ws),
		"foo": inspectResult(idA, "foo", true, ws),
	}
	id, mounts := findSelf(context.Background(), f, mountinfo{points: mi.points, ids: []string{strings.Repeat("e", 64)}}, []byte("0::/docker/"+idB+"\n"), "foo", true)
	if id != idA || len(mounts) != 1 || mounts[0].Source != "/host/ws" {
		t.Fatalf("got %q %v", id, mounts)
	}
	if id, mounts := findSelf(context.Background(), fakeInspector{}, mi, nil, "foo", true); id != "" || mounts != nil {
		t.Fatalf("nothing verifiable, got %q %v", id, mounts)
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add([]byte(mountinfoHostNet))
	f.Add([]byte(mountinfoOwnFS))
	f.Add([]byte("1 0 8:1 /x\\040y /etc/hostname rw - ext4 /dev/sda1 rw\n"))
	f.Add([]byte("\\\\\\0 - -\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mi := parseMountinfo(data)
		if len(mi.ids) > maxCandidate {
			t.Fatalf("%d ids", len(mi.ids))
		}
		for _, id := range mi.ids {
			if !isContainerID(id) {
				t.Fatalf("bad id %q", id)
			}
			if !strings.Contains(string(data), id) {
				t.Fatalf("id %q not in the input", id)
			}
		}
		for p := range mi.points {
			if !strings.HasPrefix(p, "/") {
				t.Fatalf("relative mount point %q", p)
			}
		}
	})
}

func FuzzParseCgroup(f *testing.F) {
	f.Add([]byte("12:pids:/docker/" + idA + "\n0::/system.slice/docker-" + idB + ".scope\n"))
	f.Add([]byte("0::/\n"))
	f.Add([]byte("0::/docker-.scope/docker/\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ids := parseCgroup(data)
		if len(ids) > maxCandidate {
			t.Fatalf("%d ids", len(ids))
		}
		for _, id := range ids {
			if !isContainerID(id) || !strings.Contains(string(data), id) {
				t.Fatalf("bad id %q", id)
			}
		}
	})
}
