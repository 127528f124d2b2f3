package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"maps"
	"slices"
	"testing"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
)

// FuzzOpenAgentSession fuzzes agent-session archive bytes against a
// trusted test key: no panic, a refusal is an *AgentSessionError, and the
// only archive accepted holds exactly the files and statement the key
// signed.
func FuzzOpenAgentSession(f *testing.F) {
	fx := makeImplemented(f)
	k, other := newKey(f), newKey(f)
	good, err := ExportAgentSession(fx.runDir, k.s.KeyID(), agentSigner(k))
	if err != nil {
		f.Fatal(err)
	}
	store := storeWith(f, k)
	want := AgentSessionWant{Commit: fx.commit, Repo: "acme/widget"}
	if _, err := OpenAgentSession(good, want, agentOpener(store)); err != nil {
		f.Fatal(err)
	}
	gf := fuzzFiles(f, good)
	goodPayload, _, err := envelope.Open(gf[AttestationFile], PayloadType, AttestationFile, store)
	if err != nil {
		f.Fatal(err)
	}
	delete(gf, AttestationFile)
	forged, _ := ExportAgentSession(fx.runDir, other.s.KeyID(), agentSigner(other))
	f.Add(good)
	f.Add(forged)
	f.Add(good[:len(good)/2])
	f.Add([]byte("not an archive"))
	for name := range gf {
		m := fuzzFiles(f, good)
		m[name] = append(m[name], '\n')
		f.Add(fuzzPack(m, nil)) // a file edited: subjects stale
		delete(m, name)
		f.Add(fuzzPack(m, nil)) // a file dropped
	}
	m := fuzzFiles(f, good)
	f.Add(fuzzPack(m, map[string][]byte{AttestationFile: m[AttestationFile]})) // duplicate member
	f.Add(fuzzPack(m, map[string][]byte{envelope.MaterialFile: []byte("{}"), "../x": nil}))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := OpenAgentSession(data, want, agentOpener(store))
		if err != nil {
			if _, ok := err.(*AgentSessionError); !ok {
				t.Fatalf("untyped refusal %T %v", err, err)
			}
			return
		}
		got := fuzzFiles(t, data)
		p, _, err := envelope.Open(got[AttestationFile], PayloadType, AttestationFile, store)
		delete(got, AttestationFile)
		if err != nil || !bytes.Equal(p, goodPayload) || !maps.EqualFunc(got, gf, bytes.Equal) {
			t.Fatalf("accepted an archive the trusted key did not sign (%v)", err)
		}
	})
}

func fuzzFiles(t testing.TB, data []byte) map[string][]byte {
	list, err := archive.Read(bytes.NewReader(data), archive.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, f := range list {
		m[f.Name] = f.Data
	}
	return m
}

// fuzzPack writes files then extra as a .tar.gz without the checks of
// archive.Write (a duplicate member is possible).
func fuzzPack(files map[string][]byte, extra map[string][]byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	put := func(name string, b []byte) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(b)), Mode: 0o644})
		tw.Write(b)
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		put(n, files[n])
	}
	for n, b := range extra {
		put(n, b)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}
