// Package mcp serves a governed agent session (internal/session) as a Model
// Context Protocol server, with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk). It is an adapter: every
// decision — which tools exist, which call may run, what is recorded — is
// the session's; this package only translates between MCP frames and
// session calls. The kernel never imports it.
//
// # Lifecycle
//
// One server serves one client over one transport (stdio for `proofgate
// mcp`). The session is opened (Options.Open) when the client initializes:
// on its first "initialize" or "server/discover" request, or, for a client
// that skips both, on its first "tools/list" or "tools/call". A session
// that cannot be opened (the run is not IMPLEMENTING, another recorder owns
// an open session) fails that request with a JSON-RPC error naming why.
// A server given Options.Refused (`proofgate mcp` on a work tree with
// uncommitted changes, whose planning was refused) has no session: it
// answers the handshake (its instructions say why) and tools/list
// (Options.RefusedTools), answers every tools/call isError with the
// refusal, never calls Open and records nothing, so an agent host shows
// the reason instead of a failed server.
// When the transport closes (stdin reaches EOF) or the context is cancelled
// (SIGTERM, SIGINT), [Server.Run] refuses new calls, waits for the calls
// in flight to be recorded and, when Options.End is set, ends the session
// with the reason "client disconnected" or "interrupted". Calls are served
// concurrently: a tool that runs long does not hold up the next call.
//
// # tools/list
//
// The tools are Session.Tools() (the tools some rule could allow, in
// contract order), each with the contract's description and the inputSchema
// internal/tool.InputSchema generates from its params: a closed object
// ("additionalProperties": false) listing the required params, strings with
// maxLength, pattern and enum, integers with their safe range, path rules in
// the description. The schema is advisory for the client: the session
// re-checks every argument (internal/tool.Render) and refuses what does not
// fit, whatever the client validated.
//
// # tools/call
//
// Every tools/call — also one naming a tool tools/list did not show, or
// naming one in another case — goes to Session.Call with the tool name as
// sent (exact bytes), the arguments object (absent = {}), and the
// "traceparent" and "tracestate" strings of the request's _meta when
// present. The answer is a CallToolResult:
//
//	finished, result success   isError false, text: stdout
//	finished, otherwise        isError true,  text: stdout, then
//	                           "result R, exit code N" (R (OUTCOME) for a
//	                           timeout, output-limit, oom or error) and stderr
//	blocked                    isError true,  "blocked by policy rule ID: REASON"
//	pending approval           isError false, "waiting for approval of action A
//	                           (proofgate tool approve RUN A --actor NAME); call
//	                           again with the same arguments after approval"
//	rejected                   isError true,  "action A was rejected by a human ..."
//	refused (bad arguments,    isError true,  the refusal, e.g. "tool argument
//	ambiguous action, ...)                    \"name\": does not match pattern ..."
//
// and carries structuredContent {"action", "status", "rule_id", "result",
// "outcome", "exit_code", "input_hash", "output_hash", "error"} (members empty for what does
// not apply are omitted) so that a program can branch without parsing text;
// every tool's outputSchema is OutcomeSchema, and the last text block is
// the serialized structuredContent. Capabilities other than tools are not
// declared, and their requests are refused as method not found.
// Tool output is passed as text with invalid UTF-8 replaced by U+FFFD.
package mcp
