"""The run store: every run and every finished conversation, in one SQLite file.

Where: ``--db PATH``, else ``$SIMULATOR_DB``, else ``.simulator/runs.db`` in the working folder
(:func:`default_db_path`).

How it is opened: WAL journal (readers in other processes never wait for the runner, and the runner never
waits for them), ``synchronous=NORMAL`` (a commit is durable against a crash of Simulator; a power cut may
lose the last commits, never corrupt the file), foreign keys on, and a busy timeout so that two writers
take turns instead of failing. Each result is committed the moment it is saved: a crash loses at most the
conversations that were in flight, and a resumed run skips every key in :meth:`RunStore.completed_keys`.

Schema (built by the numbered migrations below; the ``migrations`` table records which have run)::

    migrations  name TEXT PRIMARY KEY, applied_at TEXT          -- e.g. ('m001_tables', '2026-...')

    runs        id            TEXT PRIMARY KEY   -- 20261129-232501-ab12cd: UTC time + random, sorts by time
                created       TEXT NOT NULL      -- ISO 8601; aware times are stored in UTC
                finished      TEXT               -- NULL until the run ends
                status        TEXT NOT NULL      -- running | completed | interrupted | failed (as stored; see
                                                 -- "Leases" for what a reader is shown)
                agent_version TEXT
                note          TEXT NOT NULL
                suite_hash    TEXT NOT NULL      -- what was run, for estimates and comparisons
                snapshot      TEXT NOT NULL      -- JSON list[SuiteSnapshot] (keys as written: exclude_unset)
                settings      TEXT NOT NULL      -- JSON RunSettings
                versions      TEXT NOT NULL      -- JSON {"simulator": ..., "python": ...}
                plan          TEXT NOT NULL      -- JSON list[PlanItem]
                totals        TEXT               -- JSON RunSummary (simulator.models.summary): the run summary,
                                                 -- NULL until first computed; an older version's summary
                                                 -- (counts, usage, duration) still reads
                repeat_of     TEXT               -- the run this one repeats (plain id, no foreign key)
                imported_from TEXT               -- the id it had where it was exported, for `import run`
                                                 -- (and its repeats); NULL for runs made here
                replay_of     TEXT               -- the recorded run this one replays or reruns (plain id)

    results     id         INTEGER PRIMARY KEY   -- insertion order
                run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE
                key        TEXT NOT NULL         -- the PlanItem key; UNIQUE (run_id, key)
                suite      INTEGER NOT NULL      -- index into the run's snapshot
                case_name  TEXT NOT NULL
                persona    TEXT
                repeat     INTEGER NOT NULL
                outcome    TEXT NOT NULL         -- pass | fail | error | unsure | user_error
                duration_s REAL NOT NULL
                finished   TEXT NOT NULL
                result     TEXT NOT NULL         -- JSON CaseResult (transcript, scores, reasons)

    cassettes   run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE
                key        TEXT NOT NULL         -- the PlanItem key; PRIMARY KEY (run_id, key)
                data       BLOB NOT NULL         -- zlib JSON Cassette (simulator.models.cassette), secrets scrubbed

    reviews     id         TEXT PRIMARY KEY      -- random hex
                run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE
                key        TEXT NOT NULL         -- the PlanItem key of the result reviewed
                target     TEXT NOT NULL         -- result | step N | a score's check text
                verdict    TEXT NOT NULL         -- pass / fail (result), met / not_met (step, check)
                reason     TEXT NOT NULL
                reviewer   TEXT NOT NULL
                created_at TEXT NOT NULL         -- ISO 8601 UTC; insert-only: the newest of a target counts

    leases      run_id     TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE
                pid        INTEGER NOT NULL      -- the process running the run ...
                host       TEXT NOT NULL         -- ... on this host (socket.gethostname())
                token      TEXT NOT NULL         -- random, one per taking: a reused pid is not the owner
                started    TEXT NOT NULL         -- when it took the run
                heartbeat  TEXT NOT NULL         -- renewed every HEARTBEAT_S seconds while it runs

    indexes     runs(created, id) for listing and ``latest``; runs(suite_hash, status, created) for
                estimates and comparison defaults; results(run_id, key) through the UNIQUE constraint; reviews(run_id,
                created_at, id) for a run's reviews in order.

Immutability is enforced by the database itself, whoever writes to the file:

* ``runs_keep_what_was_run``: an UPDATE that names ``id``, ``created``, ``suite_hash``, ``snapshot``,
  ``settings``, ``versions``, ``agent_version``, ``plan`` or ``repeat_of`` aborts (``runs_keep_where_from``:
  ``imported_from`` too; ``runs_keep_replay_of``: ``replay_of``); only ``note``, ``status``, ``totals`` and
  ``finished`` can change;
* ``results_insert_only``, ``results_no_replace``, ``results_no_delete``: a result is never updated,
  replaced (``INSERT OR REPLACE``) or deleted on its own; it goes only with its run (``delete_run``).

The engine's LangGraph checkpoints live in a file beside the store (``runs-checkpoints.db``), not in it: a
synchronous store write and the checkpointer's connection waited on each other's locks. A store file written
by an older version may still hold those tables (``checkpoints``, ``writes``); they do not make it foreign.

Large payloads (snapshot, plan, each result) are JSON text. Reading or listing runs never reads the
``results`` table; :meth:`RunStore.results` reads one run's results, in plan order, and
:meth:`RunStore.iter_results` the same a few at a time (the run summary is computed over it). The terminal table
never reads a whole run: :meth:`RunStore.outcome_counts` counts in SQL, :meth:`RunStore.first_results` reads
only the rows shown (chosen by SQLite over the small columns), :meth:`RunStore.iter_result_rows` streams the
rows of ``run --json`` with the reasons taken out by ``json_extract``, and :meth:`RunStore.count_mentioning`
searches the stored JSON in SQL. No migration was needed for them: the columns were there. A run's plan is
read one item at a time into a compact :class:`~simulator.models.run.Plan` (never a list of objects), and
results are put in plan order by asking for a batch of the plan's keys at a time (:meth:`RunStore.stored_keys`
tells a resumed run which are done the same way): reading a run holds nothing the size of the run but its plan.

Connections are set up by :func:`simulator._sqlite.connect`, which the request cache and the checkpointer use
too.

Leases: a run's status is true. The process that runs a run (``run``, ``runs resume``, ``runs repeat``) takes
its lease first (:meth:`RunStore.acquire`: one ``BEGIN IMMEDIATE`` transaction that writes the lease only when
there is none or its owner is gone, and sets the status ``running``), renews the heartbeat from a thread
(:meth:`RunStore.heartbeat`), and gives the lease back with the final status in one transaction
(:meth:`RunStore.finish`). An owner is gone when its heartbeat is older than :data:`STALE_AFTER_S`, or, on
this host, when its pid no longer exists (``os.kill(pid, 0)``; a zombie counts as gone). Readers are shown
``interrupted`` for a run stored ``running`` whose owner is gone (a SIGKILL, a power cut), so nothing says
``running`` forever; a second process asking for a run whose owner is alive is refused with
:class:`RunBusyError` naming ``pid@host`` and since when. Two resumes started at once: exactly one takes the
lease.

Read-only: a store whose file or folder cannot be written (or is marked read-only with ``chmod a-w``, which
counts for root too) is opened read-only (``mode=ro``; ``immutable=1`` when SQLite cannot open the WAL index
beside it), without migrating it: listing, showing and reporting work, and every write fails with a
:class:`StoreError` that says the store is read-only.

Migrations are small functions ``_mNNN_...`` in :data:`MIGRATIONS`, applied in order, each in one
transaction with its row in ``migrations``. A file whose ``migrations`` table names a migration this
version does not know was written by a newer Simulator: it is refused, never downgraded or altered.
"""

from simulator.store._file import DB_ENV, default_db_path, new_run_id, writable
from simulator.store._leases import HEARTBEAT_S, HOST, STALE_AFTER_S, Lease, RunBusyError, pid_alive
from simulator.store._listing import RunListing
from simulator.store._migrations import MIGRATIONS, Migration, imported_from_note, migrate, migration_name
from simulator.store._recordings import recording_name, recordings_folder
from simulator.store._rows import ResultRow, SearchRow, Unreadable, UnreadableRunError
from simulator.store._store import RunStore

__all__ = [
    "DB_ENV",
    "HEARTBEAT_S",
    "HOST",
    "MIGRATIONS",
    "STALE_AFTER_S",
    "Lease",
    "Migration",
    "ResultRow",
    "RunBusyError",
    "RunListing",
    "RunStore",
    "SearchRow",
    "Unreadable",
    "UnreadableRunError",
    "default_db_path",
    "imported_from_note",
    "migrate",
    "migration_name",
    "new_run_id",
    "pid_alive",
    "recording_name",
    "recordings_folder",
    "writable",
]
