# events.capnp — the record format of sandboxd's event log: one `Event` per record.
#
# Evolution rules (docs/event-format.md): field ordinals and union ordinals are never
# reused or renumbered; a new field or payload gets the next free ordinal; a field is
# never removed (deprecate it by renaming to `obsoleteX`); a field's type never changes;
# new enumerants are appended. Every record written by an older version stays readable,
# and tests/golden/ holds one record of every payload written by the first version.
#
# Units: instants are nanoseconds since the Unix epoch (UTC), durations are nanoseconds,
# sizes are bytes unless the name says MiB. A duration of 0 means "none".
@0xf32c1df9f1a28e6e;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("sandboxd::schema");

struct Event {
  # Envelope: identifies the record and the operation it belongs to.
  eventId @0 :Text;          # unique per event (for example a UUID)
  sandboxId @1 :Text;        # the record key: one sandbox's events stay in one partition
  sequence @2 :UInt64;       # per sandbox, 1 for `created`, dense: consumers drop duplicates
  tenant @3 :Text;
  principal @4 :Text;        # who caused it: a user, or "system" for timers and runtime results
  occurredAtNs @5 :Int64;
  correlationId @6 :Text;    # the client request or operation this event belongs to
  causationId @7 :Text;      # the event or command that caused this one

  payload :union {
    created @8 :Created;
    started @9 :Started;
    pauseRequested @10 :PauseRequested;
    paused @11 :Paused;
    resumeRequested @12 :ResumeRequested;
    resumed @13 :Resumed;
    deleteRequested @14 :DeleteRequested;
    deleted @15 :Deleted;
    failed @16 :Failed;
    execStarted @17 :ExecStarted;
    execFinished @18 :ExecFinished;
    fileWritten @19 :FileWritten;
    fileRead @20 :FileRead;
    storageSampled @21 :StorageSampled;
    snapshotTaken @22 :SnapshotTaken;
    timeoutChanged @23 :TimeoutChanged;
    commandRejected @24 :CommandRejected;
    fileOpRequested @25 :FileOpRequested;
    fileOpFinished @26 :FileOpFinished;
    execKillRequested @27 :ExecKillRequested;
    redacted @28 :Redacted;
    networkChanged @29 :NetworkChanged;
    connectionOpened @30 :ConnectionOpened;
    connectionDenied @31 :ConnectionDenied;
    connectionClosed @32 :ConnectionClosed;
    template @33 :TemplateEvent;   # a template's history; sandboxId is "@templates"
    claimRequested @34 :ClaimRequested;  # a pool sandbox is handed to a tenant (docs/pools.md)
    claimed @35 :Claimed;
    snapshotRequested @36 :SnapshotRequested;
    snapshotDeleted @37 :SnapshotDeleted;
  }
}

enum PauseMode {
  filesystem @0;   # processes end; the writable layer is kept; resume starts fresh processes
  memory @1;       # process state is kept (checkpoint/restore or freezer)
}

enum PauseReason {
  user @0;
  idleTimeout @1;
  recovery @2;
}

enum DeleteReason {
  user @0;
  lifetime @1;
  retention @2;
  idleTimeout @3;
}

enum IdleAction {
  pause @0;
  delete @1;
}

enum RuntimeKind {
  runsc @0;
  crun @1;
  hollow @2;
}

enum RuntimeStep {
  # The step the runtime could not complete; named after the state it was attempted in.
  creating @0;
  pausing @1;
  resuming @2;
  deleting @3;
  running @4;      # the sandbox stopped unexpectedly while running
  claiming @5;     # a pool sandbox's claim: the runtime could not apply the claim's environment
}

enum ErrorCode {
  # The project's errc (events/errc.hpp); 0 is never written.
  none @0;
  notFound @1;
  conflict @2;
  permissionDenied @3;
  invalidArgument @4;
  resourceExhausted @5;
  unavailable @6;
  notADirectory @7;
  isADirectory @8;
  tooLarge @9;
  internal @10;
}

enum CommandKind {
  createSandbox @0;
  pauseSandbox @1;
  resumeSandbox @2;
  deleteSandbox @3;
  exec @4;
  readFile @5;
  writeFile @6;
  setTimeout @7;
  snapshot @8;
  runtimeStarted @9;
  runtimePaused @10;
  runtimeResumed @11;
  runtimeDeleted @12;
  runtimeFailed @13;
  execFinished @14;
  storageSampled @15;
  idleTimer @16;
  lifetimeTimer @17;
  retentionTimer @18;
  makeDir @19;
  removePath @20;
  renamePath @21;
  listDir @22;
  statPath @23;
  killExec @24;
  timeoutTimer @25;
  redactSandbox @26;
  setNetwork @27;
  openConnection @28;
  closeConnection @29;
  claimSandbox @30;
  runtimeClaimed @31;
  deleteSnapshot @32;
}

enum OpOutcome {
  # How an operation that reached the runtime ended.
  completed @0;    # it ran to its end (an exec's exit code, a file change done)
  failed @1;       # the runtime refused or could not do it: errorCode and errorMessage say why
  interrupted @2;  # sandboxd stopped while it ran: whether it took effect is unknown
}

enum FileOpKind {
  write @0;
  makeDir @1;
  remove @2;
  rename @3;
  snapshot @4;     # a snapshot of the writable layer (SnapshotRequested / SnapshotTaken)
}

enum FileReadKind {
  read @0;
  list @1;
  stat @2;
}

struct EnvVar {
  name @0 :Text;
  value @1 :Text;                # empty when secret
  secret @2 :Bool;
  valueSha256 @3 :Data;          # older records only: a secret's SHA-256 (32 bytes); no longer
                                 # written — neither a secret nor its hash reaches the log
}

struct Limits {
  memoryMib @0 :UInt32;
  cpuMillicores @1 :UInt32;
  pids @2 :UInt32;
  diskMib @3 :UInt32;
}

struct NetworkPolicy {
  # docs/network.md. Whatever the mode, link-local (metadata), loopback, multicast and
  # reserved addresses, the node's own and other sandboxes' are never reachable, and a
  # private address only through an address-block rule that covers it.
  mode @0 :Mode;
  allowedHosts @1 :List(Text);   # the rules, each in the canonical text of network/rule.hpp:
                                 # [udp://]NAME|*.NAME|CIDR|ADDRESS[:PORTS]; none in mode none
  enum Mode {
    none @0;        # loopback only
    full @1;        # "all": every public address, and what a rule allows besides
    allowList @2;   # only what a rule allows
  }
}

struct Label {
  key @0 :Text;
  value @1 :Text;
}

struct Timeouts {
  idleTimeoutNs @0 :Int64;       # 0: never idle out
  idleAction @1 :IdleAction;
  idlePauseMode @2 :PauseMode;   # the mode when idleAction is pause
  maxLifetimeNs @3 :Int64;       # from creation; 0: unlimited
  pausedRetentionNs @4 :Int64;   # how long a paused sandbox is kept; 0: forever
  timeoutNs @5 :Int64;           # run time allowed from each start or resume, then
                                 # idleAction applies (delete, or pause); 0: none
}

struct Created {
  template @0 :Text;
  limits @1 :Limits;
  timeouts @2 :Timeouts;
  network @3 :NetworkPolicy;
  labels @4 :List(Label);
  runtime @5 :RuntimeKind;
  clientRequestId @6 :Text;      # makes create idempotent
  env @7 :List(EnvVar);          # every exec sees these
  content @8 :TemplateRef;       # the exact template content the root filesystem is made of
  pool @9 :Text;                 # "": a tenant's own sandbox; else the warm pool that made it
                                 # (its key, docs/pools.md): the event's tenant is "@pool" and
                                 # a claimRequested hands it to a tenant
  fromSnapshot @10 :Text;        # a fork: its writable layer started as this snapshot ("" none)
}

struct TemplateRef {
  # What a sandbox's root filesystem is made of: the template as it was when the sandbox was
  # created (a template never changes once ready; its name may later stand for another one).
  id @0 :Text;                   # tpl_<16 hex digits>, as the template's events name it
  digest @1 :Data;               # 32 bytes: the template's digest (TemplateReady.digest)
  layers @2 :List(Data);         # 32 bytes each: the layers' digests, lowest first
  env @3 :List(EnvVar);          # the template's environment, below the sandbox's own
  workingDirectory @4 :Text;     # "" = "/"
  user @5 :Text;                 # "" = root
}

struct Started {}

struct ClaimRequested {
  # A warm pool's sandbox is handed to the event's tenant (and principal, correlation id):
  # from this event on it is that tenant's, as if the tenant had created it now. What the
  # tenant's create asked for beyond the pool's key comes with it; the runtime then applies
  # the environment (status claiming) and `claimed` follows. docs/pools.md.
  labels @0 :List(Label);
  env @1 :List(EnvVar);          # as in Created: a secret's value is never written
  timeouts @2 :Timeouts;
  clientRequestId @3 :Text;      # the claiming create's: a retried create finds this sandbox
}

struct Claimed {
  # The runtime applied the claim: the sandbox runs under its new tenant.
}

struct PauseRequested {
  mode @0 :PauseMode;
  reason @1 :PauseReason;
}

struct Paused {
  mode @0 :PauseMode;
  writableLayerBytes @1 :UInt64;
}

struct ResumeRequested {}

struct Resumed {}

struct DeleteRequested {
  reason @0 :DeleteReason;
}

struct Deleted {
  writableLayerBytes @0 :UInt64;  # the layer as measured just before it was removed; 0 when
                                  # not measured (already gone, or a record of an older version)
}

struct Failed {
  step @0 :RuntimeStep;
  reason @1 :Text;
}

struct ExecStarted {
  execId @0 :Text;
  argv @1 :List(Text);
  workingDirectory @2 :Text;
  timeoutNs @3 :Int64;           # 0: none
  env @4 :List(EnvVar);          # this exec's own variables (secret values hashed)
  stdinBytes @5 :UInt64;
  stdinSha256 @6 :Data;          # 32 bytes; empty when stdin is streamed or none
  maxOutputBytes @7 :UInt64;     # per stream
  background @8 :Bool;
  user @9 :Text;                 # who it runs as (user[:group]); "": the sandbox's root
}

struct ExecFinished {
  execId @0 :Text;
  exitCode @1 :Int32;            # -1 when ended by a signal
  signal @2 :Int32;              # 0 when it exited
  durationNs @3 :Int64;
  stdoutBytes @4 :UInt64;
  stderrBytes @5 :UInt64;
  timedOut @6 :Bool;
  oomKilled @7 :Bool;
  outputTruncated @8 :Bool;      # it wrote more than maxOutputBytes; the rest was dropped
  stdoutSha256 @9 :Data;         # 32 bytes, of the output handed to the caller; empty when
  stderrSha256 @10 :Data;        # the exec did not complete
  outcome @11 :OpOutcome;
  errorCode @12 :ErrorCode;      # outcome failed: why
  errorMessage @13 :Text;
}

struct FileWritten {
  path @0 :Text;
  bytes @1 :UInt64;
  sha256 @2 :Data;               # 32 bytes
}

struct FileRead {
  # A read of the sandbox's files (logged after it is served, with its outcome).
  path @0 :Text;
  bytes @1 :UInt64;              # read: the bytes returned
  kind @2 :FileReadKind;
  errorCode @3 :ErrorCode;       # none when it succeeded
  errorMessage @4 :Text;
  sha256 @5 :Data;               # read: 32 bytes, of the content returned
  entries @6 :UInt64;            # list: the entries returned
}

struct StorageSampled {
  writableLayerBytes @0 :UInt64;
}

struct SnapshotTaken {
  # The outcome of a SnapshotRequested (docs/snapshots.md). Records written before snapshots
  # had an intent carry only the first two fields (opId "" and outcome completed).
  snapshotId @0 :Text;
  writableLayerBytes @1 :UInt64; # the source layer's referenced bytes at the snapshot
  opId @2 :Text;                 # the SnapshotRequested's
  outcome @3 :OpOutcome;
  errorCode @4 :ErrorCode;       # outcome failed: why
  errorMessage @5 :Text;
  name @6 :Text;                 # as the caller gave it ("" for none)
  referencedBytes @7 :UInt64;    # the snapshot's btrfs qgroup counts, after a commit
  exclusiveBytes @8 :UInt64;     # (exclusive: what deleting the snapshot would free)
}

struct SnapshotRequested {
  # A read-only snapshot of the sandbox's writable layer, logged before it is taken.
  opId @0 :Text;                 # unique per sandbox; SnapshotTaken names it
  snapshotId @1 :Text;           # snap-<16 hex digits>, chosen by sandboxd
  name @2 :Text;                 # the caller's name for it ("" for none)
}

struct SnapshotDeleted {
  # A snapshot of this sandbox was deleted (logged before its subvolume is deleted). Also
  # after the sandbox itself was deleted: its snapshots outlive it.
  snapshotId @0 :Text;
}

struct TimeoutChanged {
  timeouts @0 :Timeouts;         # the complete new settings
}

struct CommandRejected {
  command @0 :CommandKind;
  code @1 :ErrorCode;
  message @2 :Text;
}

struct FileOpRequested {
  # A change to the sandbox's files, logged before it reaches the sandbox.
  opId @0 :Text;                 # unique per sandbox; FileOpFinished names it
  kind @1 :FileOpKind;
  path @2 :Text;
  toPath @3 :Text;               # rename: the new path
  recursive @4 :Bool;            # remove: a directory and everything in it; makeDir: parents
  mode @5 :UInt32;               # write, makeDir: permission bits
  bytes @6 :UInt64;              # write: the content's size
  sha256 @7 :Data;               # write: 32 bytes, of the content
}

struct FileOpFinished {
  opId @0 :Text;
  kind @1 :FileOpKind;
  outcome @2 :OpOutcome;
  errorCode @3 :ErrorCode;       # outcome failed: why
  errorMessage @4 :Text;
  bytes @5 :UInt64;              # write: as the runtime wrote them
  sha256 @6 :Data;               # write: 32 bytes, of what the runtime wrote
}

struct ExecKillRequested {
  execId @0 :Text;
  signal @1 :Int32;
}

struct Redacted {
  # A deleted sandbox's private details (labels, environment names, file paths, command
  # lines, operation messages) were removed from the read models (docs/audit-log.md). The
  # log keeps its events; only the read models forget.
  reason @0 :Text;               # why, as the operator gave it (a ticket, a request id)
}

struct NetworkChanged {
  # The sandbox's egress policy from now on (the whole policy); connections open under the
  # old one run on, new ones are decided by this one.
  network @0 :NetworkPolicy;
}

enum NetProtocol {
  tcp @0;
  udp @1;
  dns @2;          # a question to sandboxd's resolver (no address is dialled)
}

enum NameSource {
  # Where the name of a destination came from.
  none @0;         # the sandbox dialled an address and named nothing
  tlsSni @1;       # the TLS ClientHello's server name
  httpHost @2;     # the HTTP request's Host (or its absolute URI)
  connect @3;      # an HTTP CONNECT target
  dnsQuestion @4;  # a DNS question
}

struct Destination {
  # What a sandbox tried to reach, as sandboxd's egress proxy or resolver saw it.
  protocol @0 :NetProtocol;
  name @1 :Text;                 # lower-case, no trailing dot; "" when only an address
  nameSource @2 :NameSource;
  address @3 :Text;              # the address dialled or to be dialled; "" for dns
  port @4 :UInt16;
  addressClass @5 :Text;         # "public", "private", "link-local", "node", "sandbox", ...
  nameResolves @6 :Bool;         # sandboxd's resolver answered `address` for `name`
}

struct ConnectionOpened {
  # Allowed by the policy in force; logged before the proxy dials the destination.
  connectionId @0 :Text;         # unique per sandbox; ConnectionClosed names it
  destination @1 :Destination;
  rule @2 :Text;                 # the rule that allowed it, or "all" (mode all)
}

struct ConnectionDenied {
  destination @0 :Destination;
  reason @1 :Text;               # why, and what would allow it
  repeats @2 :UInt32;            # more denials of the same destination folded into this one
}

struct ConnectionClosed {
  connectionId @0 :Text;
  bytesOut @1 :UInt64;           # from the sandbox to the destination (payload bytes)
  bytesIn @2 :UInt64;            # from the destination to the sandbox
  durationNs @3 :Int64;
  outcome @4 :OpOutcome;         # completed; failed (the destination could not be reached:
                                 # errorMessage); interrupted (sandboxd stopped meanwhile: the
                                 # bytes are those counted until then)
  errorMessage @5 :Text;
}

# --- templates ---------------------------------------------------------------------------
# Every template event has the record key and sandboxId "@templates" (one stream, one
# partition, dense sequence numbers across all templates: the node's template registry is
# its only writer). docs/templates.md describes the lifecycle.

enum TemplateScope {
  global @0;       # every tenant may use it; only the operator (scope admin) makes it
  tenant @1;       # the event's tenant's own: invisible to every other tenant
}

enum TemplateSource {
  stock @0;        # one of the node's stock templates (base, debian, python, node)
  import @1;       # an image or root filesystem archive streamed to the daemon
  spec @2;         # built from a spec (TOML, or the Dockerfile subset)
}

struct TemplateEvent {
  templateId @0 :Text;           # tpl_<16 hex digits>; a name may later be reused by another
  name @1 :Text;                 # [a-z0-9_-]{1,64}, unique among the scope's live templates
  scope @2 :TemplateScope;       # tenant: the owner is the event's tenant
  change :union {
    created @3 :TemplateCreated;
    layerAdded @4 :TemplateLayerAdded;
    stepStarted @5 :TemplateStepStarted;
    stepFinished @6 :TemplateStepFinished;
    ready @7 :TemplateReady;
    failed @8 :TemplateFailed;
    deleted @9 :TemplateDeleted;
  }
}

struct TemplateCreated {
  # A template is being made; layers and steps follow, then ready or failed.
  source @0 :TemplateSource;
  description @1 :Text;          # what it is made from, in words ("bookworm minbase + python3 ...")
  inputSha256 @2 :Data;          # 32 bytes: of the spec, the archive or the package list
  parentId @3 :Text;             # the template it is built on (a spec's FROM); "" for none
}

struct TemplateLayerAdded {
  index @0 :UInt32;              # 0 = the lowest
  sha256 @1 :Data;               # 32 bytes: the layer's tree digest (its name in the store)
  bytes @2 :UInt64;              # what it takes in the layer store
  entries @3 :UInt64;            # files, directories and links in it
  origin @4 :Text;               # "parent", "image layer sha256:...", "step 3", "stock"
  reused @5 :Bool;               # it was stored already (layers are stored once)
}

struct TemplateStepStarted {
  index @0 :UInt32;              # the spec's steps from 0
  instruction @1 :Text;          # as written ("RUN pip install -r requirements.txt")
  cacheKey @2 :Data;             # 32 bytes: (parent layer, step, copied files' hash)
}

struct TemplateStepFinished {
  index @0 :UInt32;
  outcome @1 :OpOutcome;
  cached @2 :Bool;               # the build cache had its layer: nothing ran
  exitCode @3 :Int32;            # a RUN step's; 0 otherwise
  durationNs @4 :Int64;
  layer @5 :Data;                # 32 bytes: the layer it produced; empty when it made none
  outputBytes @6 :UInt64;        # stdout and stderr together
  errorCode @7 :ErrorCode;       # outcome failed: why
  errorMessage @8 :Text;
}

struct TemplateReady {
  # The template can be used. Its content is fixed from here on.
  digest @0 :Data;               # 32 bytes: SHA-256 of layers and config (docs/templates.md)
  layers @1 :List(TemplateLayer);
  env @2 :List(EnvVar);          # image defaults every sandbox of it starts with
  workingDirectory @3 :Text;
  user @4 :Text;
  command @5 :List(Text);        # the default command (`sandboxctl run` and images' CMD)
  totalBytes @6 :UInt64;         # its layers' bytes
  own :union {
    # What its tenant is billed for and its bytes quota counts: the bytes of its layers that
    # the template it is built on (a spec's FROM) does not have. `unknown` in records written
    # before it (then totalBytes counts).
    unknown @7 :Void;
    bytes @8 :UInt64;
  }
}

struct TemplateLayer {
  sha256 @0 :Data;
  bytes @1 :UInt64;
}

struct TemplateFailed {
  errorCode @0 :ErrorCode;
  errorMessage @1 :Text;
}

struct TemplateDeleted {
  reason @0 :Text;               # "user", or why sandboxd replaced it
}
