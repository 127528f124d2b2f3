package replay

// Files of a run directory that the replay reads (internal/run adds the
// writer's own: its lock and process records).
const (
	EventsFile   = "events.ndjson"
	RunFile      = "run.json"
	ContractFile = "contract.json"
	BlobDir      = "blobs"
)
