package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// rootTmpImage is the helper image with /tmp and /home/sandbox root 0755.
func rootTmpImage(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	bin, err := testimage.HelperBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := testimage.Import(ctx, "proofgate-test/roottmp", testimage.RootTmpFiles(bin))
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestTmpIsWhatTheAttestationSays: on an image whose /tmp and $HOME are
// root 0755, the unprivileged check can still write to both, their modes
// and owners are the attested ones, and the options in /proc/mounts are
// exactly the attested options.
func TestTmpIsWhatTheAttestationSays(t *testing.T) {
	r, helper := sandbox(t)
	for _, ref := range []string{rootTmpImage(t), helper} {
		t.Run(ref, func(t *testing.T) {
			for _, p := range []string{"/tmp/x", Home + "/x"} {
				assertOutcome(t, check(t, r, helperSpec(ref, "write", p, "4096"), 1<<20), runtime.Passed)
			}
			for dir, want := range map[string]string{"/tmp": "mode=1777 uid=0 gid=0", Home: "mode=0700 uid=65534 gid=65534"} {
				res := check(t, r, helperSpec(ref, "stat", dir), 1<<20)
				assertOutcome(t, res, runtime.Passed)
				if got := strings.TrimSpace(res.stdout.String()); got != want {
					t.Errorf("%s: %s, want %s", dir, got, want)
				}
				attested := res.Attestation.Profile["tmpfs"].(map[string]any)[dir].(string)
				if !strings.Contains(","+attested+",", ","+strings.Fields(want)[0]+",") {
					t.Errorf("%s: attested %q does not say %s", dir, attested, strings.Fields(want)[0])
				}
			}
			res := check(t, r, helperSpec(ref, "cat", "/proc/mounts"), 1<<20)
			assertOutcome(t, res, runtime.Passed)
			attested := res.Attestation.Profile["tmpfs"].(map[string]any)
			for _, dir := range []string{"/tmp", Home} {
				effective, ok := mountOptions(res.stdout.String(), dir)
				if !ok {
					t.Fatalf("%s is not a tmpfs in:\n%s", dir, res.stdout.String())
				}
				if err := sameTmpfsOptions(attested[dir].(string), effective); err != nil {
					t.Errorf("%s: attested %q, mounted %q: %v", dir, attested[dir], effective, err)
				}
			}
		})
	}
}

// mountOptions returns the options of the tmpfs mounted at dir in a
// /proc/mounts text.
func mountOptions(procMounts, dir string) (string, bool) {
	opts, found := "", false
	for _, l := range strings.Split(procMounts, "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 && f[1] == dir {
			opts, found = f[3], f[2] == "tmpfs"
		}
	}
	return opts, found
}

// sameTmpfsOptions compares attested tmpfs options with the kernel's view
// of the mount: rw/ro, nosuid, nodev, exec/noexec, size (bytes vs k), and
// mode, uid and gid, which the kernel shows only when they differ from
// 1777, 0 and 0. The kernel's own relatime is the only extra allowed.
func sameTmpfsOptions(attested, effective string) error {
	want := map[string]bool{"relatime": true}
	for _, o := range strings.Split(attested, ",") {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "exec":
		case "size":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n%1024 != 0 {
				return fmt.Errorf("attested size %q", v)
			}
			want[fmt.Sprintf("size=%dk", n/1024)] = true
		case "mode":
			if strings.TrimLeft(v, "0") != "1777" {
				want["mode="+strings.TrimLeft(v, "0")] = true
			}
		case "uid", "gid":
			if v != "0" {
				want[o] = true
			}
		default:
			want[o] = true
		}
	}
	got := map[string]bool{}
	for _, o := range strings.Split(effective, ",") {
		got[o] = true
	}
	if strings.Contains(","+attested+",", ",exec,") && got["noexec"] {
		return fmt.Errorf("attested exec, mounted noexec")
	}
	if !maps.Equal(want, got) {
		return fmt.Errorf("want %v", slices.Sorted(maps.Keys(want)))
	}
	return nil
}

// TestEnvironmentIsExactlyDeclaredPlusAttested: the check's environment,
// as a set, is the declared one plus HOME and the keys the attestation
// names as coming from the image or the daemon; HOSTNAME is not among them
// unless declared.
func TestEnvironmentIsExactlyDeclaredPlusAttested(t *testing.T) {
	r, ref := sandbox(t)
	ctx := context.Background()
	bin, err := testimage.HelperBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	withEnv, err := testimage.ImportWithChanges(ctx, "proofgate-test/env", testimage.HelperFiles(bin), "ENV IMAGE_VAR=from-image", "ENV DECLARED=image-default")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOSTNAME", "harness-host")
	cases := []struct {
		image    string
		declared map[string]string
	}{
		{ref, map[string]string{"DECLARED": "yes", "GOFLAGS": "-mod=readonly"}},
		{ref, nil},
		{withEnv, map[string]string{"DECLARED": "yes"}},
		{ref, map[string]string{"HOSTNAME": "declared-host", "PATH": "/bin"}},
	}
	for i, c := range cases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			spec := helperSpec(c.image, "env")
			spec.Env = c.declared
			res := check(t, r, spec, 1<<20)
			assertOutcome(t, res, runtime.Passed)
			var env map[string]string
			if err := json.Unmarshal(res.stdout.Bytes(), &env); err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{"HOME": true}
			for k, v := range c.declared {
				want[k] = true
				if env[k] != v {
					t.Errorf("%s=%q, declared %q", k, env[k], v)
				}
			}
			p := res.Attestation.Profile
			for _, key := range []string{"env_keys", "image_env_keys", "daemon_env_keys"} {
				list, ok := p[key].([]any)
				if !ok {
					t.Fatalf("profile has no %s list: %v", key, p)
				}
				for _, k := range list {
					want[k.(string)] = true
				}
			}
			got := map[string]bool{}
			for k := range env {
				got[k] = true
			}
			if !maps.Equal(got, want) {
				t.Fatalf("environment keys %v, declared plus attested %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
			if c.declared["HOSTNAME"] == "" && got["HOSTNAME"] {
				t.Fatalf("HOSTNAME=%q reached the check undeclared", env["HOSTNAME"])
			}
		})
	}
}
