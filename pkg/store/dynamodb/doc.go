// Package dynamodb is the store.ResponseStore on Amazon DynamoDB, so that
// any Lambda instance can read, continue, cancel or delete a response
// another instance made.
//
// # Table
//
// One table, on-demand capacity (PAY_PER_REQUEST), TTL on expires_at:
//
//	pk (S, partition key)  <tenant>#<response id>; '%' and '#' in the tenant are
//	                       escaped (%25, %23), so no id reaches another tenant
//	sk (S, sort key)       "response" for the head item, "chunk#<gen>#<00000>" for
//	                       chunks, "event#<last seq>#<first seq>" for stream events,
//	                       "signals" for a background run's signal item (a
//	                       cancel flag its worker polls; store.RunSignals;
//	                       a tombstone once the response is deleted)
//
// A response is one record: the JSON object {"response","input","context"}
// (the response as the client sees it, this request's input items, the
// conversation before them — the whole previous chain, so that continuing
// needs one read — and a background response's job, the items' hidden
// fields and truncation's cut: wireRecord), gzip-compressed. Its
// head item holds:
//
//	status      (S)  the response status, for conditional updates
//	created_at  (N)  the response's created_at
//	expires_at  (N)  epoch seconds; the TTL attribute
//	version     (N)  store.Record.Version, for conditional updates
//	gen         (S)  random per write: names the write's chunks, and lets a
//	                 retried write recognise its own earlier success
//	format      (S)  "json+gzip"
//	size        (N)  bytes of JSON
//	body        (B)  the compressed record, when it is at most 350 KiB
//	chunks      (N)  otherwise: the number of chunk items holding it
//	claim       (S)  a background job's claim token (store.Job.Claim), which
//	                 a claimed append of stream events checks
//
// and each chunk item holds body (B, at most 350 KiB, leaving room under
// DynamoDB's 400 KB item limit) and the same expires_at, so that DynamoDB's
// TTL removes every part of a response.
//
// # What a response costs
//
// Measured against DynamoDB Local (TestCallBudget reports calls and the
// capacity units DynamoDB returns; reads are strongly consistent, so an
// instance reads what another has just written):
//
//	record (JSON → gzip)              items  create                            get
//	normal (2.5 KB → 0.95 KB)         1      PutItem: 2 WCU                    GetItem: 1 RCU
//	50-turn chain (430 KB → 116 KB)   1      PutItem: 114 WCU                  GetItem: 29 RCU
//	300 KB tool output (→ 59 KB)      1      PutItem: 58 WCU                   GetItem: 15 RCU
//	1 MB random text (→ 0.8 MB)       4      TransactWriteItems: 874 WCU *     GetItem + BatchGetItem: 199 RCU
//	5 MB random text (→ 4 MB)         13     BatchWriteItem + PutItem: 3929 WCU GetItem + BatchGetItem: 986 RCU
//
// (* DynamoDB Local reports single units; AWS bills transactional writes
// double.) A normal response: create 1 call, get 1, continuation 1 read
// plus the new response's writes, update 1, delete 2 (DeleteItem, and a
// Query for event items); a large one adds the calls of its chunks
// (BatchWriteItem and BatchGetItem take up to 25 and 100 items a call).
// Appending 50 stream events of a background response costs a GetItem of
// the head and one PutItem of 1 WCU (the PutItem alone for a writer that
// has just read or written the record: AppendEventsKnown); following them, one Query per poll
// (plus, when nothing is new, an eventually consistent GetItem of the run's
// signal item, 0.5 RCU, or of the head when the run has none yet: queued).
// The running worker's poll for a cancel request is that same GetItem of
// the signal item, whatever the record's size (a 300 KB head: 57.5 RCU).
// A create whose input
// holds item references (TestCallBudgetItemReferences): references into
// the previous response cost nothing more (1 GetItem + 1 PutItem); every
// other referenced response costs one GetItem (plus its chunks' reads if
// it is large), however many of its items are referenced; nothing more is
// written.
//
// Why compress: the JSON of responses compresses 2.5–5× (random text, the
// worst case, 1.33×), and capacity units are per KB written and per 4 KB
// read. gzip rather than raw DEFLATE: the same size plus 18 bytes, and its
// CRC-32 and length check that a record reassembled from chunks is the
// record written. Level 4: measured (BenchmarkCodec), it writes records
// 6–9% larger than level 6 in a third of the time, and 15–20% smaller than
// level 1 at about the same total encoding time (the JSON encoding
// dominates); on normal records every level gives the same units.
//
// # Writes and their integrity
//
// Create is conditional (attribute_not_exists(pk) OR expires_at <= now), so
// it never overwrites a live response. A record that fits is one PutItem.
// A larger one is written in one TransactWriteItems (chunks and head, up to
// 10 chunks: under the 4 MB transaction limit), or, larger still, its
// chunks first (BatchWriteItem, unprocessed items resent with backoff) and
// its head last by a conditional PutItem. Readers reach chunks only through
// a head that names their generation, so nobody ever sees part of a
// record.
//
// Update checks the state machine (store.UpdateAllowed: a legal
// transition, or an unchanged non-terminal status as a checkpoint) and
// writes the new head, as version rec.Version+1, with the condition status
// = expect AND version = rec.Version AND expires_at > now: a terminal
// response is never rewritten, and of concurrent writers that read the same
// version exactly one wins (whether they change the status or only
// checkpoint, renew a lease or set a cancel flag). New chunks are written
// first; the replaced head comes back (ReturnValues ALL_OLD) and its chunks
// are deleted afterwards. A reader that read the replaced head and finds
// its chunks gone reads the head again.
//
// A failed condition comes back with the item that failed it
// (ReturnValuesOnConditionCheckFailure) and becomes store.ErrConflict or
// store.ErrNotFound — or success, when the item is this write's own (same
// gen): a retry of a write whose answer was lost. Transactions carry the
// SDK's idempotency token.
//
// Delete is a DeleteItem of the head conditional on a live record (from
// then on no reader finds it; a resent DeleteItem that finds no head after
// an attempt whose answer was lost counts as done, see deleteLive, and a
// Query of the partition finds what that answer named), then a
// BatchWriteItem deleting its chunks,
// and a Query for event items (an empty one for all but background
// responses) with a BatchWriteItem deleting those it finds and putting a
// tombstone in place of the run's signal item, so that a signal written
// after the delete (a follower's renewed note) fails instead of making
// the response look live again. A signal item of an earlier response of
// the same id (expired, or deleted and the id created again), which a
// different expiry tells, is replaced whole by the new response's first
// signal: its cancel flag never reaches the new one.
//
// Throttling and transient errors are retried by the SDK's standard
// retryer (NewClient sets 8 attempts, 50 ms–2 s jittered backoff, no retry
// quota) within the request's deadline. What still fails is returned: the
// response is then not stored and not readable. Chunks of a failed write
// are deleted when the failure is definite (the service refused); after an
// ambiguous failure (timeout, lost connection) they are left, invisible, for
// TTL, since the head may have been written after all.
//
// # Expiry
//
// expires_at is ExpiresAt, or now + Config.Retention (default 30 days).
// Reads treat expires_at <= now as absent, before DynamoDB's TTL deletes the
// items (which can take days); a new record may take an expired record's
// id.
//
// # Input items
//
// Input items live inside the record, and ListInputItems reads the record
// (one GetItem for a normal response) and pages in memory
// (store.PageItems; the cursor is an item id). Storing each input item as
// its own item would make a page one Query, but every create would then
// write one item per input item (more calls and at least 1 WCU each, past
// the budget of 2 calls), while continuations still need the whole record
// in one read. The cost is that each page of a large record reads the
// whole record.
//
// # Stream events of background responses (store.EventLog)
//
// Each AppendEvents call is one item: its events, gzip-compressed JSON
// (inline, or in chunks like a record's body), with the first and last
// sequence numbers in the sort key and a write stamp. An append is a
// consistent read of the head (the response must exist; its expires_at is
// copied) and one PutItem: 50 text deltas cost 1 WCU, not 50. Events(after)
// is one consistent Query of the items whose last number is past `after`
// (their key range), merged by sequence number with the later write
// winning, which is how a resumed worker's re-emitted events replace the
// earlier ones; when it finds nothing it reads the head too, to tell
// "nothing new" from "gone" (ErrNotFound). Event data that is compact JSON
// is stored as JSON, anything else as base64, so events read back byte for
// byte. Events expire with the response as it was when they were appended.
// A worker's append near or past the end of its lease is conditional on
// its claim (AppendEventsClaimed; the head's claim attribute, the job's
// store.Job.Claim): the same one call, a TransactWriteItems of a
// ConditionCheck of the head and the event item's Put, whose units count
// the head's size as well (DynamoDB Local: 2 WCU with a normal record, 116
// with one holding 300 KB of random text; AWS bills transactions double).
//
// # Largest response
//
// Config.MaxRecordBytes (default 64 MiB of JSON: response, input and
// context together) bounds a record; past it Create and Update fail with
// ErrTooLarge before any call. The layout itself allows MaxChunks × 350 KiB
// (about 342 MiB compressed). In practice all items of a response share a
// partition, which sustains about 1,000 WCU/s: a 5 MB incompressible
// response (4k WCU) takes seconds of it, and records of tens of MB take
// tens of seconds, absorbed by the retryer only within the request's
// deadline.
//
// # Conversations (store.ConversationStore)
//
// A conversation is a partition of its own, pk <tenant>#<conversation id>:
// a head item (sk "conversation": created_at, expires_at, metadata (a
// map, or a JSON string when it has an empty key: convMetadata), next —
// the next item's sequence number —, lock, lock_until, and cut: the
// store.Conversation.Cut the last append with items set), one row per item
// (sk "item#<seq, 16 digits>": its JSON gzip-compressed, or chunks like a
// record's past 350 KiB) and one id row per item (sk "id#<item id>": its
// sequence number). Appending a turn is O(turn): LockConversation's
// UpdateItem, a GetItem of the head and one TransactWriteItems of the rows
// and the head's update, conditional on the lock and on next (48 items or
// 3 MB per transaction). Listing a page is O(page): the head, the cursor's id
// row, one Query of limit+1 rows (and the cursor's). LoadConversationItems reads every row
// (the model's context: O(conversation)). Every row carries the head's
// expires_at (retention from the creation). TestConversationBudget measures
// it (docs/aws.md has the figures).
//
// # Table creation
//
// In AWS the table belongs to template.yaml (the key schema and TTL above).
// For local runs and tests, EnsureTable creates it when missing, waits for
// it, and enables TTL. Reads check expires_at themselves: DynamoDB deletes
// an expired item up to days later (DynamoDB Local within a second or so).
package dynamodb
