package artifact

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// CompanionName is the companion Sigstore bundle's name beside the archive
// name: without .tar.gz, plus .sigstore.json (as `bundle export` names
// it).
func CompanionName(archiveName string) string {
	return strings.TrimSuffix(archiveName, ".tar.gz") + ".sigstore.json"
}

// AttestationMembers reads an archive and returns its envelope
// (bundle.AttestationFile) and its Sigstore material
// (envelope.MaterialFile) members, when present.
func AttestationMembers(archiveBytes []byte) (map[string][]byte, error) {
	keep := func(name string) bool { return name == bundle.AttestationFile || name == envelope.MaterialFile }
	files, err := archive.ReadKeep(bytes.NewReader(archiveBytes), archive.DefaultLimits, keep)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, f := range files {
		if keep(f.Name) {
			out[f.Name] = f.Data
		}
	}
	return out, nil
}

// CheckCompanion checks that the companion Sigstore bundle comp carries
// the archive's envelope: for a keyless archive it is its
// attestation.sigstore.json member byte for byte; for a key-signed one a
// key Sigstore bundle of the same payload type, payload and signature,
// whose hint is the envelope's key id.
func CheckCompanion(archiveBytes, comp []byte) error {
	members, err := AttestationMembers(archiveBytes)
	if err != nil {
		return err
	}
	if m, ok := members[envelope.MaterialFile]; ok {
		if !bytes.Equal(m, comp) {
			return fmt.Errorf("not the archive's %s", envelope.MaterialFile)
		}
		return nil
	}
	env, ok := members[bundle.AttestationFile]
	if !ok {
		return fmt.Errorf("the archive has no %s", bundle.AttestationFile)
	}
	sb, err := sigstore.Read(comp)
	if err != nil {
		return err
	}
	if err := sb.SameEnvelope(env); err != nil {
		return err
	}
	var e envelope.Envelope
	if err := strictjson.Decode(env, &e); err != nil || len(e.Signatures) != 1 {
		return errors.New("the archive's envelope does not have one signature")
	}
	if sb.Hint != e.Signatures[0].KeyID {
		return fmt.Errorf("public key hint %q is not the envelope's key id", printable.Clip(sb.Hint))
	}
	return nil
}
