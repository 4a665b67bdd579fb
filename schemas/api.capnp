# api.capnp — sandboxd's RPC interface, capability style (docs/api.md explains every call).
#
# A client connects (a unix socket, or TCP with TLS where the address is not loopback)
# and gets the bootstrap capability `Gateway`. `authenticate(token)` returns a `Session`
# scoped to the token's tenant, principal and scopes; every capability reached from it
# (`Sandbox`, `Exec`, `Admin`, upload and watch handles) acts for that identity only.
# A sandbox of another tenant is indistinguishable from a missing one (NOT_FOUND).
#
# Errors. A call that fails throws a Cap'n Proto exception whose description starts with
# the project's error code, a colon and a space, then a message that names the thing
# and says what to do:
#     "not_found: sandbox sb_0a1b2c does not exist; check the id (sandboxctl list)"
# Codes (docs/errors.md): not_found, conflict, permission_denied, invalid_argument,
# resource_exhausted, unavailable, not_a_directory, is_a_directory, too_large, internal.
# The exception type is OVERLOADED for resource_exhausted and unavailable (retrying may
# succeed), DISCONNECTED when the daemon is shutting down, FAILED otherwise.
#
# Evolution: the rules of events.capnp (ordinals never reused, fields appended).
# Units: instants are nanoseconds since the Unix epoch (UTC), durations nanoseconds,
# sizes bytes unless the name says MiB.
@0xb7d4c1a2e93f5d61;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("sandboxd::rpc");

using Ev = import "events.capnp";

interface Gateway {
  # The bootstrap capability: the only call available before authentication.
  authenticate @0 (token :Text) -> (session :Session, identity :Identity);
  # PERMISSION_DENIED for an unknown token (after a constant-time comparison);
  # RESOURCE_EXHAUSTED when the tenant already has its most connections open.

  version @1 () -> (version :Text, apiLevel :UInt32);
}

struct Identity {
  tenant @0 :Text;
  principal @1 :Text;
  scopes @2 :List(Text);           # "sandboxes", "admin"
}

# --- sandboxes ---------------------------------------------------------------------------

interface Session {
  create @0 (request :CreateRequest) -> (sandbox :Sandbox, info :SandboxInfo, fromPool :Bool);
  # Returns once the sandbox is running (or has failed: info.state says so). A request
  # that repeats an earlier clientRequestId returns the sandbox that request made.
  # RESOURCE_EXHAUSTED past the tenant's quota (sandboxes, total memory, total disk).
  # Served from a warm pool of the request's template, runtime and limits when one has a
  # ready sandbox (fromPool; docs/pools.md), unless noPool; otherwise made cold.

  get @1 (sandboxId :Text) -> (info :SandboxInfo);
  # From the sandbox's actor (the source of truth). NOT_FOUND for a deleted sandbox.

  list @2 (filter :ListFilter, pageToken :Text, limit :UInt32) ->
          (sandboxes :List(SandboxSummary), nextPageToken :Text);
  # From the `sandboxes` read model, newest first, keyset pages (nextPageToken "" at
  # the end; limit 0 = 100, at most 1000). It lags the actors by the projection lag
  # (docs/api.md). UNAVAILABLE when the node has no read model.

  open @3 (sandboxId :Text) -> (sandbox :Sandbox);
  # A capability for an existing sandbox of this tenant; NOT_FOUND otherwise.

  admin @4 () -> (admin :Admin);
  # PERMISSION_DENIED without the "admin" scope.

  redact @5 (sandboxId :Text, reason :Text) -> ();
  # Removes a deleted sandbox's private details (labels, environment names, command lines,
  # file paths, operation messages) from the read models, recorded as a `redacted` event
  # with `reason` (at most 1024 bytes); the audit chain still verifies (docs/audit-log.md).
  # Returns once the event is durable (the read models follow by the projection lag).
  # NOT_FOUND for a sandbox this tenant does not have; CONFLICT until it is deleted; a
  # repeat succeeds with nothing to do.

  templates @6 () -> (templates :Templates);
  # The templates this tenant sees: the global ones and its own (docs/templates.md).

  listSnapshots @7 (sandboxId :Text) -> (snapshots :List(SnapshotInfo));
  # This tenant's snapshots (docs/snapshots.md), oldest first; with sandboxId, only those
  # taken of that sandbox (deleted or not). They outlive their sandbox.

  getSnapshot @8 (snapshotId :Text) -> (snapshot :SnapshotInfo);
  # NOT_FOUND for a snapshot this tenant does not hold (another tenant's included);
  # INVALID_ARGUMENT for an id that is not one sandboxd makes (snap- and 16 hex digits).

  deleteSnapshot @9 (snapshotId :Text) -> ();
  # Deletes the snapshot (a `snapshot_deleted` event on its sandbox's stream, then its
  # subvolume); forks made from it keep their own layers. NOT_FOUND as getSnapshot.
}

struct SnapshotInfo {
  id @0 :Text;                     # snap-<16 hex digits>
  name @1 :Text;
  sandboxId @2 :Text;              # the sandbox it was taken of
  takenAtNs @3 :Int64;
  template @4 :Text;               # the sandbox's template (a fork starts on it)
  runtime @5 :Text;                # the sandbox's runtime (a fork runs on it)
  layerBytes @6 :UInt64;           # the sandbox's writable layer when it was taken
  referencedBytes @7 :UInt64;      # btrfs qgroup counts of the snapshot: every block it reaches,
  exclusiveBytes @8 :UInt64;       # and the blocks only it holds (what deleting it frees)
  sequence @9 :UInt64;             # of its snapshot_taken in the sandbox's stream
}

struct CreateRequest {
  template @0 :Text;               # "" = "base"
  runtime @1 :Text;                # "runsc" | "crun"; "" = the node's default
  limits @2 :Ev.Limits;            # 0 fields = the node's defaults
  timeouts @3 :TimeoutSettings;
  env @4 :List(EnvVar);            # every exec sees these; kept across pauses
  network @5 :Ev.NetworkPolicy;    # a policy the node cannot enforce is INVALID_ARGUMENT
  labels @6 :List(Ev.Label);
  clientRequestId @7 :Text;        # makes create idempotent per tenant
  noPool @8 :Bool;                 # make it cold even when a warm pool could serve it
  fromSnapshot @9 :Text;           # a fork: the writable layer starts as this snapshot of the
                                   # tenant's; template and runtime are the snapshot's ("" or
                                   # the same, else INVALID_ARGUMENT)
}

struct EnvVar {
  name @0 :Text;
  value @1 :Text;
  secret @2 :Bool;                 # the value never reaches the log: only the name and a hash
}

struct TimeoutSettings {
  # Each field either keeps the current setting (on set) / the default (on create) or
  # sets a duration; a duration of 0 turns the timeout off. `timeout` and `lifetime` set
  # one deadline (the end time): both set in one request is INVALID_ARGUMENT.
  timeout :union {                 # the sandbox ends this long from now (its end time)
    keep @0 :Void;
    ns @1 :Int64;
  }
  idleTimeout :union {             # ends (or pauses) after this long without activity
    keep @2 :Void;
    ns @3 :Int64;
  }
  lifetime :union {                # a hard limit counted from creation
    keep @4 :Void;
    ns @5 :Int64;
  }
  pausedRetention :union {         # a paused sandbox is deleted after this long
    keep @6 :Void;
    ns @7 :Int64;
  }
  onTimeout :union {               # what the timeout and the idle timeout do
    keep @8 :Void;
    delete @9 :Void;
    pause @10 :Ev.PauseMode;       # auto-pause in this mode instead of deleting
  }
}

enum SandboxState {
  creating @0;
  running @1;
  pausing @2;
  paused @3;
  resuming @4;
  deleting @5;
  deleted @6;
  failed @7;
}

struct SandboxInfo {
  id @0 :Text;
  state @1 :SandboxState;
  template @2 :Text;
  runtime @3 :Text;
  limits @4 :Ev.Limits;
  labels @5 :List(Ev.Label);
  createdAtNs @6 :Int64;
  endTimeNs @7 :Int64;             # created + lifetime: when it ends (0: never, as now set)
  pauseMode @8 :Ev.PauseMode;      # when pausing, paused or resuming
  idleTimeoutNs @9 :Int64;
  lifetimeNs @10 :Int64;
  pausedRetentionNs @11 :Int64;
  onTimeout @12 :Text;             # "delete" | "pause:filesystem" | "pause:memory"
  network @13 :Ev.NetworkPolicy;
  envNames @14 :List(Text);        # the sandbox environment's names; values are never returned
  writableBytes @15 :UInt64;       # the latest measured writable layer size
  failure @16 :Text;               # state failed: why
  sequence @17 :UInt64;            # of the last event applied
  tenant @18 :Text;
}

struct SandboxSummary {
  # A row of the `sandboxes` read model (what `list` answers): as of the projection, which
  # lags the actors (docs/api.md). `info` or `get` has the rest, from the actor.
  id @0 :Text;
  state @1 :SandboxState;
  template @2 :Text;
  limits @3 :Ev.Limits;
  labels @4 :List(Ev.Label);
  pauseMode @5 :Ev.PauseMode;      # when pausing, paused or resuming
  writableBytes @6 :UInt64;
  createdAtNs @7 :Int64;
  updatedAtNs @8 :Int64;
  sequence @9 :UInt64;             # of the last event projected
}

struct ListFilter {
  states @0 :List(SandboxState);   # empty: every state but deleted
  labels @1 :List(Ev.Label);       # all must match
  includeDeleted @2 :Bool;
}

interface Sandbox {
  # Every call answers NOT_FOUND once the sandbox is deleted.
  info @0 () -> (info :SandboxInfo);

  exec @1 (request :ExecRequest, output :OutputSink) -> (result :ExecResult);
  # Runs a process and returns when it ends. Output chunks reach `output` as they are
  # produced, with flow control (a slow sink slows the process's pipe, never the daemon's
  # memory). `output` may be null: output is then only counted.

  start @2 (request :ExecRequest, output :OutputSink) -> (exec :Exec);
  # The same, in the background: returns at once with a handle.

  execs @3 () -> (execs :List(ExecInfo));
  # The execs in flight.

  openExec @4 (execId :Text) -> (exec :Exec);
  # A handle to an exec in flight or finished recently (NOT_FOUND otherwise). It waits,
  # kills, and writes to the exec's streamed stdin, which ends once every handle to it is
  # dropped.

  readFile @5 (path :Text, sink :ByteSink) -> (info :FileInfo, sha256 :Data);
  # Streams the file's content to `sink` in chunks, then returns. Served while running
  # or paused (offline from the writable layer).

  writeFile @6 (path :Text, mode :UInt32) -> (upload :Upload);
  # The content follows through upload.write; upload.commit makes it visible atomically
  # (a reader sees the old or the new file). Refused (CONFLICT) while memory-paused.

  listDir @7 (path :Text, limit :UInt32) -> (entries :List(DirEntry), truncated :Bool);
  stat @8 (path :Text) -> (info :FileInfo);
  makeDir @9 (path :Text, parents :Bool) -> ();
  remove @10 (path :Text, recursive :Bool) -> ();
  rename @11 (from :Text, to :Text) -> ();

  pause @12 (mode :Ev.PauseMode) -> (info :SandboxInfo);
  resume @13 () -> (info :SandboxInfo);
  delete @14 () -> ();
  setTimeouts @15 (timeouts :TimeoutSettings) -> (info :SandboxInfo);

  watch @16 (fromSequence :UInt64, sink :EventSink) -> (handle :Handle);

  snapshot @17 (name :Text) -> (snapshot :SnapshotInfo);
  # A read-only snapshot of the writable layer (docs/snapshots.md): running (its processes
  # frozen for the instant), or paused in either mode; CONFLICT otherwise. Returns once its
  # snapshot_taken is durable. RESOURCE_EXHAUSTED past the tenant's snapshot quota; name at
  # most 128 bytes of UTF-8.
  # The sandbox's events from `fromSequence` (0 or 1: from its creation), then live ones
  # as they are appended, until the handle is dropped or the sandbox is deleted (then
  # sink.end("deleted") follows its last event). A sink that does not keep up slows the
  # stream (flow control); the daemon never buffers more than a window per stream.
}

struct ExecRequest {
  argv @0 :List(Text);             # argv[0] is looked up in PATH when it has no '/'
  env @1 :List(EnvVar);            # added to the sandbox's environment for this exec
  cwd @2 :Text;                    # "" = the template's working directory, else "/"
  stdin @3 :Data;                  # written to the process's stdin, then end of file
  streamStdin @4 :Bool;            # start only: stdin follows through Exec.writeStdin
  timeoutNs @5 :Int64;             # 0: runs until it ends or the sandbox stops
  maxOutputBytes @6 :UInt64;       # per stream; 0 = the node's default cap
  user @7 :Text;
  # Who runs it: "" = the template's user (its USER; root when it has none); else
  # `user[:group]`, each a name of the sandbox's /etc/passwd and /etc/group or a number
  # (0-65535, the sandbox's own ids). INVALID_ARGUMENT names a user that is not there.
}

enum OutputStream {
  stdout @0;
  stderr @1;
}

interface OutputSink {
  write @0 (stream :OutputStream, data :Data) -> stream;
  done @1 () -> ();
  # After the last write, before the exec's result: the daemon waits for its answer, so a
  # sink has been given every write once done returns. (A streaming call whose
  # capability is released can be cancelled before it is delivered; done keeps it.)
}

struct ExecResult {
  execId @0 :Text;
  exitCode @1 :Int32;              # -1 when ended by a signal
  signal @2 :Int32;                # 0 when it exited
  timedOut @3 :Bool;
  oomKilled @4 :Bool;
  outputTruncated @5 :Bool;        # more than maxOutputBytes was produced
  durationNs @6 :Int64;
  stdoutBytes @7 :UInt64;
  stderrBytes @8 :UInt64;
  interrupted @9 :Bool;            # the daemon restarted while it ran: its outcome is unknown
}

struct ExecInfo {
  execId @0 :Text;
  argv @1 :List(Text);
  startedAtNs @2 :Int64;
}

interface Exec {
  wait @0 () -> (result :ExecResult);
  kill @1 (signal :Int32) -> ();   # 0 = SIGKILL; ends every process the exec started
  writeStdin @2 (data :Data) -> stream;
  closeStdin @3 () -> ();
  info @4 () -> (info :ExecInfo);
}

interface ByteSink {
  write @0 (data :Data) -> stream;
  done @1 () -> ();
  # After the last write, before readFile returns; as OutputSink.done.
}

interface Upload {
  write @0 (data :Data) -> stream;
  commit @1 () -> (info :FileInfo, sha256 :Data);
  # Dropping an Upload without commit discards what was written.
}

enum FileType {
  regular @0;
  directory @1;
  symlink @2;
  other @3;
}

struct FileInfo {
  path @0 :Text;
  type @1 :FileType;
  size @2 :UInt64;
  mode @3 :UInt32;                 # permission bits
  mtimeNs @4 :Int64;
}

struct DirEntry {
  name @0 :Text;
  info @1 :FileInfo;
}

interface EventSink {
  event @0 (event :Ev.Event, partition :Int32, offset :Int64) -> stream;
  end @1 (reason :Text) -> ();
  # The stream is over: "deleted" (watch), "caught up" (tail without follow), or
  # "<code>: <message>" when it failed. Nothing follows.
}

interface Handle {
  # Dropping the last reference cancels what it stands for.
}

# --- templates (docs/templates.md) ------------------------------------------------------

interface Templates {
  # Every change is a template event before it is answered. Another tenant's template is
  # NOT_FOUND, exactly like a name that was never used.

  list @0 () -> (templates :List(TemplateInfo));
  # The templates this tenant sees (its own and the global ones, deleted ones left out), by
  # name; stock templates not built yet are listed with status "stock".

  get @1 (name :Text) -> (template :TemplateInfo);

  build @2 (name :Text, progress :TemplateProgress) -> (template :TemplateInfo);
  # Builds stock template `name` (base, debian, python, node) now, or answers it when it
  # is ready already. Without the admin scope: what the caller's first create of `name` would
  # build (a failure less than a minute old is answered). The answer comes once it is ready or has
  # failed (status "failed", `failure` says why); `progress` (may be null) hears the phases
  # and the build tool's output meanwhile.

  delete @3 (name :Text) -> (template :TemplateInfo);
  # CONFLICT while a sandbox uses it (naming up to ten) or another live template is built on
  # it; PERMISSION_DENIED for a global one without the admin scope. Its layers that no other
  # template holds are collected.

  importArchive @4 (name :Text, scope :Ev.TemplateScope, format :ArchiveFormat,
                    description :Text, progress :TemplateProgress) -> (upload :TemplateUpload);
  # A template `name` made of the archive written to `upload` (docs/templates.md, "Archive
  # rules"): the archive is unpacked as it arrives (an image's layers once it is whole), and
  # `commit` answers once the template is ready. A name in use, or scope global without the
  # admin scope, is refused at once. Dropping the upload without commit fails the template.

  buildSpec @5 (name :Text, scope :Ev.TemplateScope, format :SpecFormat, spec :Text,
                description :Text, progress :TemplateProgress) -> (upload :TemplateUpload);
  # A template `name` built from `spec` (docs/templates.md "Build from a spec"): FROM a
  # template, RUN steps in build sandboxes (network none), COPY from the build context, ENV,
  # WORKDIR, USER. Write the build context to `upload` as a tar (nothing for none: a spec
  # without COPY needs none), then `commit` answers once the template is ready, or the error
  # that failed it (a step's exit status, a refused context entry). `progress` hears each step
  # and its output. A spec that does not parse (naming its line), a name in use, or scope
  # global without the admin scope is refused at once.
}

enum SpecFormat {
  toml @0;         # the TOML spec
  dockerfile @1;   # the Dockerfile subset: FROM, RUN, COPY, ENV, WORKDIR, USER
}

enum ArchiveFormat {
  rootfs @0;       # a root filesystem tarball (tar, tar.gz, tar.zst): one layer
  image @1;        # an OCI image layout or a docker save archive, as a tar: its layers
}

interface TemplateUpload {
  write @0 (data :Data) -> stream;
  commit @1 () -> (template :TemplateInfo);
  # The archive is complete: answers the ready template, or the error that refused it (the
  # template's `failed` event says it too).
}

interface TemplateProgress {
  progress @0 (phase :Text, fraction :Float64, output :Text) -> stream;
  # fraction 0..1, or -1 when unknown; output: the build tool's lines since the last call.
}

struct TemplateInfo {
  id @0 :Text;                     # tpl_<16 hex digits>; "" for a stock template not built yet
  name @1 :Text;
  scope @2 :Ev.TemplateScope;
  tenant @3 :Text;                 # tenant scope: the owner
  status @4 :Text;                 # "stock" (not built yet), "building", "ready", "failed"
  source @5 :Ev.TemplateSource;
  description @6 :Text;
  digest @7 :Data;                 # ready: the template digest (32 bytes)
  layers @8 :List(Ev.TemplateLayer); # ready: lowest first
  env @9 :List(Ev.EnvVar);
  workingDirectory @10 :Text;
  user @11 :Text;
  command @12 :List(Text);
  totalBytes @13 :UInt64;
  failure @14 :Text;               # failed: "<code>: <message>"
  createdAtNs @15 :Int64;
  settledAtNs @16 :Int64;          # ready or failed; 0 while building
  usedBy @17 :List(Text);          # the live sandboxes that use it (at most 100)
}

# --- administration (scope "admin") ------------------------------------------------------

interface Admin {
  bill @0 (tenant :Text, fromNs :Int64, toNs :Int64, by :BillGrouping) -> (report :BillReport);
  # The bill of `tenant` (required) for [fromNs, toNs), whole hours (INVALID_ARGUMENT
  # otherwise), from the billing read model. By sandbox: one line per sandbox; by hour or
  # day: one line per period, the sum of that period's per-sandbox lines.

  audit @1 (query :AuditQuery) -> (rows :List(AuditRow), nextPageToken :Text);
  # Rows by time (then chain position), keyset pages.

  auditVerify @2 (tenant :Text) -> (ok :Bool, checkedRows :UInt64, problems :List(AuditProblem));
  # Recomputes every chain; tenant "" = every tenant, else only that tenant's problems.

  tail @3 (from :List(PartitionOffset), follow :Bool, sink :EventSink) -> (handle :Handle);
  # The whole event stream from the given offsets (missing partitions: from 0). Without
  # follow the stream ends (sink.end("caught up")) at the end offsets as of the call.

  history @4 (sandboxId :Text) -> (events :List(LoggedEvent));
  # Every event of one sandbox (of any tenant, deleted or not), read from the log itself
  # (never a read model) up to its partition's end as of the call, in log order: what
  # `sandboxctl replay` and `diff` fold with the state machine (docs/replay.md). NOT_FOUND
  # when the log holds no event of the sandbox.

  verifyProjection @5 (name :Text) -> (rowsCompared :UInt64, differences :List(RowDifference),
                                       offsets :List(PartitionOffset));
  # Rebuilds projection `name` ("read_models") from offset zero of the log into a scratch
  # schema and compares it with the live read models in one snapshot (docs/projections.md):
  # no differences when they are exact. NOT_FOUND for an unknown projection, UNAVAILABLE
  # without PostgreSQL.

  projectionStatus @6 () -> (partitions :List(ProjectionPartition));
  # Per projection and log partition: the projection's committed next offset, the log's end
  # offset, and the lag in events and in seconds (docs/replay.md). UNAVAILABLE without
  # PostgreSQL.

  rebuildProjection @7 (name :Text) -> (rowsReplaced :UInt64, offsets :List(PartitionOffset));
  # Rebuilds projection `name` ("read_models") from offset zero of the log into a scratch
  # schema while the live read models keep serving and the projector keeps applying, then
  # replaces the live rows by the rebuilt ones in one transaction (docs/replay.md).
  # `offsets`: where the live projection stood at the switch. NOT_FOUND for an unknown
  # projection, UNAVAILABLE without PostgreSQL.

  checkDeterminism @8 (sandboxId :Text) -> (checked :UInt64, differences :List(StateDifference));
  # For sandbox `sandboxId` ("" = every sandbox of the log): the state its actor holds
  # against the state replayed from its events in the log. No differences when equal.
  # NOT_FOUND when the log holds no event of the sandbox.

  pools @9 () -> (pools :Pools);
  # The node's warm pools (docs/pools.md).
}

interface Pools {
  # Warm pools: sandboxes kept ready for creates of one template, runtime and limits.
  # Changes made here last until the daemon stops; a start begins with the config file's
  # [[pools]].
  list @0 () -> (pools :List(PoolInfo));
  set @1 (settings :PoolSettings) -> ();
  # Starts the pool of settings.key, or changes its size, maximum and refill rate.
  # INVALID_ARGUMENT for maximum below size, a rate that is not positive, a runtime the
  # node does not have.
  remove @2 (key :PoolKey) -> (removed :Bool);
  # Ends a pool: it makes no more sandboxes and deletes its ready ones (none is claimed by
  # anyone after this). removed is false when there was no such pool.
}

struct PoolKey {
  template @0 :Text;               # "" = "base"
  runtime @1 :Text;                # "" = the node's default
  limits @2 :Ev.Limits;            # 0 fields = the node's defaults, as for create
}

struct PoolSettings {
  key @0 :PoolKey;
  size @1 :UInt32;                 # ready sandboxes kept at rest
  maximum @2 :UInt32;              # most it holds (ready and being made) when demand grows
  refillPerSecond @3 :Float64;     # creates started per second at most; 0 = 20
}

struct PoolInfo {
  key @0 :Text;                    # "<template>/<runtime>/m<MiB>/c<millicores>/p<pids>/d<MiB>"
  settings @1 :PoolSettings;       # the key resolved
  ready @2 :UInt32;
  making @3 :UInt32;               # creates started, not answered yet
  target @4 :UInt32;               # size plus the last 10 s of claims, at most maximum
  hits @5 :UInt64;                 # creates served from it
  misses @6 :UInt64;               # creates it had nothing ready for (made cold)
  made @7 :UInt64;
  failed @8 :UInt64;
  retired @9 :UInt64;              # ready sandboxes deleted unclaimed
  refillSecondsMean @10 :Float64;  # its creates, started to running
  refillSecondsMax @11 :Float64;
  readyIds @12 :List(Text);        # oldest first
  lastError @13 :Text;             # of the last create or template lookup that failed
}

struct ProjectionPartition {
  projection @0 :Text;
  partition @1 :Int32;
  offset @2 :Int64;                # the next offset the projection will apply
  endOffset @3 :Int64;             # of the log, as of the call
  lagEvents @4 :Int64;             # endOffset - offset
  lagSeconds @5 :Float64;          # age of the oldest record not applied yet; 0 when none
}

struct StateDifference {
  sandboxId @0 :Text;
  field @1 :Text;                  # a field of `sandboxctl replay`'s state ("status", ...)
  live @2 :Text;                   # as the actor holds it; "" when the field is left out
  replayed @3 :Text;               # as replayed from the log; "" when left out
}

struct RowDifference {
  table @0 :Text;
  side @1 :Text;                   # "live": only the read model has it; "rebuild": only a rebuild
  row @2 :Text;                    # JSON, every column
  events @3 :List(Text);           # ids of the events of the row's sandbox that were compared
}

struct LoggedEvent {
  event @0 :Ev.Event;
  partition @1 :Int32;
  offset @2 :Int64;
}

enum BillGrouping {
  sandbox @0;
  hour @1;
  day @2;
}

struct BillLine {
  tenant @0 :Text;
  sandboxId @1 :Text;              # "" when grouped by time
  fromNs @2 :Int64;
  toNs @3 :Int64;
  computeGibSeconds @4 :Float64;   # memory GiB x seconds running
  storageGibSeconds @5 :Float64;   # writable-layer GiB x seconds kept
  computeMicros @6 :Int64;         # micro-dollars
  storageMicros @7 :Int64;
  events @8 :List(Text);           # the event ids the line comes from (by sandbox)
}

struct BillReport {
  lines @0 :List(BillLine);
  totalComputeMicros @1 :Int64;
  totalStorageMicros @2 :Int64;
  totalMicros @3 :Int64;
}

struct AuditQuery {
  tenant @0 :Text;                 # "" = every tenant
  sandboxId @1 :Text;              # "" = every sandbox
  fromNs @2 :Int64;
  toNs @3 :Int64;                  # 0: no bound
  pageToken @4 :Text;
  limit @5 :UInt32;                # 0 = 100, at most 1000
}

struct AuditRow {
  tenant @0 :Text;
  partition @1 :Int32;             # a chain is one tenant's rows of one log partition
  position @2 :Int64;              # in the chain, from 1
  eventId @3 :Text;
  sandboxId @4 :Text;
  occurredAtNs @5 :Int64;
  principal @6 :Text;
  action @7 :Text;                 # the event ("created", ...) or the rejected command
  outcome @8 :Text;                # "accepted", or the rejecting code ("conflict", ...)
  detail @9 :Text;
  hash @10 :Data;                  # SHA-256, 32 bytes (docs/audit-log.md)
  redacted @11 :Bool;              # the detail was removed by a redaction (detail is "")
}

struct AuditProblem {
  tenant @0 :Text;
  partition @1 :Int32;
  position @2 :Int64;
  eventId @3 :Text;                # "" when the row is missing
  kind @4 :Text;                   # "edited", "missing", "out of order", "truncated"
  message @5 :Text;
}

struct PartitionOffset {
  partition @0 :Int32;
  offset @1 :Int64;
}
