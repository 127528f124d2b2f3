package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/proofgate/proofgate/internal/strictjson"
)

// Attestation is an artifact attestation as POST
// /repos/{o}/{r}/attestations stored it: the Sigstore bundle byte for byte
// and the sha256 digests of its statement's subjects.
type Attestation struct {
	ID       int64
	Bundle   json.RawMessage
	Subjects []string // "sha256:<hex>"
}

// maxAttestation bounds a POST body, as a bundle with a certificate chain
// and a statement fits in well under it.
const maxAttestation = 8 << 20

var subjectDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Attestations returns the attestations stored in owner/repo with the
// subject digest ("sha256:<hex>"), oldest first.
func (s *Server) Attestations(owner, repo, digest string) []Attestation {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Attestation
	for _, a := range s.attestations[strings.ToLower(owner+"/"+repo)] {
		for _, d := range a.Subjects {
			if d == digest {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// createAttestation is POST /repos/{o}/{r}/attestations: GitHub's
// documented body {"bundle": {mediaType, verificationMaterial,
// dsseEnvelope}}; 201 {"id"}, 403 without attestations: write (Deny),
// 422 for a body that is not such a bundle over an in-toto statement. The
// fake also refuses a bundle whose verification material holds no signing
// certificate (a key-signed bundle), which the action never sends.
func (s *Server) createAttestation(w http.ResponseWriter, key string, body map[string]json.RawMessage) {
	if s.denied["attestations"] {
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration",
			"documentation_url": "https://docs.github.com/rest/repos/attestations#create-an-attestation"})
		return
	}
	raw, ok := body["bundle"]
	if !ok || len(body) != 1 {
		unprocessable(w, "the body must be exactly {\"bundle\": ...}")
		return
	}
	subjects, err := bundleSubjects(raw)
	if err != nil {
		unprocessable(w, err.Error())
		return
	}
	if s.attestations == nil {
		s.attestations = map[string][]Attestation{}
	}
	s.nextAttestation++
	a := Attestation{ID: s.nextAttestation, Bundle: append(json.RawMessage(nil), raw...), Subjects: subjects}
	s.attestations[key] = append(s.attestations[key], a)
	writeJSON(w, http.StatusCreated, map[string]int64{"id": a.ID})
}

// bundleSubjects checks that raw is a Sigstore bundle with a certificate
// and a DSSE envelope over an in-toto statement, and returns the
// statement's sha256 subject digests.
func bundleSubjects(raw json.RawMessage) ([]string, error) {
	var b struct {
		MediaType            string `json:"mediaType"`
		VerificationMaterial *struct {
			Certificate *struct {
				RawBytes string `json:"rawBytes"`
			} `json:"certificate"`
			X509CertificateChain *struct {
				Certificates []struct {
					RawBytes string `json:"rawBytes"`
				} `json:"certificates"`
			} `json:"x509CertificateChain"`
		} `json:"verificationMaterial"`
		DSSEEnvelope *struct {
			Payload     string `json:"payload"`
			PayloadType string `json:"payloadType"`
		} `json:"dsseEnvelope"`
	}
	if err := strictjson.DecodeOpen(raw, &b); err != nil {
		return nil, fmt.Errorf("bundle: %v", err)
	}
	switch {
	case !strings.HasPrefix(b.MediaType, "application/vnd.dev.sigstore.bundle"):
		return nil, fmt.Errorf("bundle: mediaType %q is not a Sigstore bundle's", b.MediaType)
	case b.VerificationMaterial == nil:
		return nil, fmt.Errorf("bundle: no verificationMaterial")
	case (b.VerificationMaterial.Certificate == nil || b.VerificationMaterial.Certificate.RawBytes == "") &&
		(b.VerificationMaterial.X509CertificateChain == nil || len(b.VerificationMaterial.X509CertificateChain.Certificates) == 0):
		return nil, fmt.Errorf("bundle: no signing certificate")
	case b.DSSEEnvelope == nil || b.DSSEEnvelope.PayloadType != "application/vnd.in-toto+json":
		return nil, fmt.Errorf("bundle: no DSSE envelope over an in-toto statement")
	}
	payload, err := base64.StdEncoding.DecodeString(b.DSSEEnvelope.Payload)
	if err != nil {
		return nil, fmt.Errorf("bundle: payload: %v", err)
	}
	var st struct {
		Subject []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	if err := strictjson.DecodeOpen(payload, &st); err != nil || len(st.Subject) == 0 {
		return nil, fmt.Errorf("bundle: the statement has no subjects (%v)", err)
	}
	var out []string
	for _, sub := range st.Subject {
		if d, ok := sub.Digest["sha256"]; ok && subjectDigest.MatchString("sha256:"+d) {
			out = append(out, "sha256:"+d)
		}
	}
	return out, nil
}

// serveAttestations is GET /repos/{o}/{r}/attestations/{subject_digest}:
// {"attestations": [{"bundle", "repository_id", "initiator"}]}, newest
// first, per_page (at most 100) honoured; an empty list when none (as gh's
// own client expects: it reports "no attestations found"). An attestation
// stored through the REST endpoint has initiator "user" (gh attestation
// verify keeps only those). GitHub also gives a bundle_url to blob storage
// (snappy-compressed); the fake leaves it out, and readers fall back to the
// inline bundle, as gh does.
func (s *Server) serveAttestations(w http.ResponseWriter, r *http.Request, q repoRequest) {
	d := q.rest[1]
	if !subjectDigest.MatchString(d) {
		unprocessable(w, "subject_digest must be sha256:<64 lowercase hex>")
		return
	}
	perPage := 30
	if v := r.URL.Query().Get("per_page"); v != "" {
		if _, err := fmt.Sscanf(v, "%d", &perPage); err != nil || perPage < 1 || perPage > 100 {
			unprocessable(w, "per_page must be 1..100")
			return
		}
	}
	type entry struct {
		Bundle       json.RawMessage `json:"bundle"`
		RepositoryID int64           `json:"repository_id"`
		Initiator    string          `json:"initiator"`
	}
	var list []entry
	all := s.attestations[strings.ToLower(q.owner+"/"+q.name)]
	for i := len(all) - 1; i >= 0 && len(list) < perPage; i-- {
		for _, sd := range all[i].Subjects {
			if sd == d {
				list = append(list, entry{all[i].Bundle, 1, "user"})
				break
			}
		}
	}
	if list == nil {
		list = []entry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"attestations": list})
}

// ExpireArtifacts marks every artifact of owner/repo expired, as GitHub
// does after the retention period: still listed, its zip gone (410).
func (s *Server) ExpireArtifacts(owner, repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.repo(owner, repo).artifacts {
		a.Expired = true
	}
}
