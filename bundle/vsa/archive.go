package vsa

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// Archive is what a VSA names of a bundle archive: the digest of its
// bytes and of the signed members inside it.
type Archive struct {
	SHA256 string // lowercase hex of the archive's bytes
	Size   int64
	// Attestations are the signed members (attestation.dsse.json,
	// attestation.sigstore.json, checkpoint.dsse.json) by file name (as
	// uri) and sha256, in that order; nil when the archive does not read
	// safely.
	Attestations []Resource
	// ReadErr is why the archive did not read safely (nil when it did).
	ReadErr error
	// SignedAt is the signed_at its attestation.dsse.json asserts (zero
	// when it has none that decodes): the bundle signer's time, which a
	// summary of the archive cannot precede (MatchEvidence). Not verified
	// here: bundle verify judges the bundle.
	SignedAt time.Time
}

// attestationMembers are the members inputAttestations names, in order.
var attestationMembers = []string{bundle.AttestationFile, envelope.MaterialFile, bundle.CheckpointFile}

// Inspect reads an archive to its end, hashing every byte, and lists the
// digests of its signed members when it reads safely within lim (nothing
// is kept but the attestation, to read its signed_at). Only a failure to read r is an
// error; an unsafe archive is an Archive with ReadErr set.
func Inspect(r io.Reader, lim archive.Limits) (*Archive, error) {
	h := sha256.New()
	cr := &counter{r: io.TeeReader(r, h)}
	files, readErr := archive.ReadKeep(cr, lim, func(name string) bool { return name == bundle.AttestationFile })
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return nil, err
	}
	if cr.err != nil {
		return nil, cr.err
	}
	a := &Archive{SHA256: hex.EncodeToString(h.Sum(nil)), Size: cr.n, ReadErr: readErr}
	if readErr != nil {
		return a, nil
	}
	byName := map[string][32]byte{}
	for _, f := range files {
		byName[f.Name] = f.SHA256
		if f.Name == bundle.AttestationFile {
			a.SignedAt = signedAt(f.Data)
		}
	}
	for _, name := range attestationMembers {
		if sum, ok := byName[name]; ok {
			a.Attestations = append(a.Attestations, Resource{URI: name, Digest: map[string]string{"sha256": hex.EncodeToString(sum[:])}})
		}
	}
	return a, nil
}

// Hasher hashes what a verifier reads of an archive, so the subject digest
// is of the very bytes verified: wrap the reader with Reader, verify, then
// call Sum, which reads the rest.
type Hasher struct {
	c *counter
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
}

// NewHasher returns a Hasher of r.
func NewHasher(r io.Reader) *Hasher {
	h := sha256.New()
	return &Hasher{c: &counter{r: io.TeeReader(r, h)}, h: h}
}

// Reader is the reader to verify from.
func (x *Hasher) Reader() io.Reader { return x.c }

// Sum reads the rest of the archive and returns the hex sha256 and size of
// all of it.
func (x *Hasher) Sum() (string, int64, error) {
	if _, err := io.Copy(io.Discard, x.c); err != nil {
		return "", 0, err
	}
	if x.c.err != nil {
		return "", 0, x.c.err
	}
	return hex.EncodeToString(x.h.Sum(nil)), x.c.n, nil
}

// counter counts the bytes read and remembers the first read error other
// than EOF (archive.ReadKeep reports it as a malformed archive).
type counter struct {
	r   io.Reader
	n   int64
	err error
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// signedAt is the predicate signed_at of a bundle attestation envelope,
// zero when it does not decode: decoded strictly (a duplicate or
// case-variant member is refused, never "last one wins"), since it bounds
// the VSA's timeVerified.
func signedAt(att []byte) time.Time {
	_, payload, err := envelope.Parse(att, bundle.PayloadType, bundle.AttestationFile)
	if err != nil {
		return time.Time{}
	}
	var st struct {
		Predicate struct {
			SignedAt string `json:"signed_at"`
		} `json:"predicate"`
	}
	if strictjson.DecodeOpen(payload, &st) != nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, st.Predicate.SignedAt)
	return t
}
