// SQL that turns a file written by this build back into older layouts, for
// the tests of reading and migrating old traces (docs/schema.md). Each
// allocations layout below is of a version before 7, so each also drops
// allocation_batch_starts.
#pragma once

namespace gcprof::test {

// The ranges table as versions 1 to 4 had it: one row per range, every row
// (batched ones too, with their kernel time) copied out of the view, no
// range_rows, range_batches or range_device_time. Rows are inserted in
// reverse id order. Leaves user_version alone.
inline const char* kVersion4Ranges =
    "CREATE TABLE v4 (run INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL,"
    " domain INTEGER NOT NULL, phase INTEGER NOT NULL, thread INTEGER NOT NULL,"
    " depth INTEGER NOT NULL, parent INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
    " end_ns INTEGER NOT NULL, step INTEGER NOT NULL, device_ns INTEGER NOT NULL DEFAULT -1,"
    " input_bytes INTEGER NOT NULL DEFAULT 0, output_bytes INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (run, id)) WITHOUT ROWID;"
    "INSERT INTO v4 SELECT run, id, name, domain, phase, thread, depth, parent, start_ns, end_ns,"
    " step, device_ns, input_bytes, output_bytes FROM ranges ORDER BY run, id DESC;"
    "DROP VIEW ranges; DROP TABLE range_rows; DROP TABLE range_batches;"
    " DROP TABLE range_device_time; ALTER TABLE v4 RENAME TO ranges;";

// The allocations as versions 4 and 5 could have them: every row, with
// its free time, in allocation_rows (as the recorder wrote a block live,
// later setting its free_ns), no allocation_frees, the view over the two tables
// alone. Leaves user_version alone.
inline const char* kVersion5Frees =
    "CREATE TABLE v5 (run INTEGER NOT NULL, addr INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " device INTEGER NOT NULL, stream INTEGER NOT NULL, thread INTEGER NOT NULL,"
    " api INTEGER NOT NULL, alloc_ns INTEGER NOT NULL, free_ns INTEGER NOT NULL,"
    " range INTEGER NOT NULL, step INTEGER NOT NULL, kind INTEGER NOT NULL, id INTEGER NOT NULL,"
    " PRIMARY KEY (run, alloc_ns, id)) WITHOUT ROWID;"
    "INSERT INTO v5 SELECT run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns,"
    " range, step, kind, id FROM allocations;"
    "DROP VIEW allocations; DROP TABLE allocation_frees; DROP TABLE allocation_rows;"
    " DROP TABLE allocation_batch_starts;"
    " DELETE FROM allocation_batches; ALTER TABLE v5 RENAME TO allocation_rows;"
    "CREATE VIEW allocations (run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns, range,"
    " step, kind, id) AS"
    " SELECT run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns, range, step, kind, id"
    " FROM allocation_rows"
    " UNION ALL"
    " SELECT b.run, json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'),"
    " json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]'),"
    " json_extract(j.value, '$[5]'), json_extract(j.value, '$[6]'),"
    " b.base_ns + json_extract(j.value, '$[7]'),"
    " CASE WHEN json_extract(j.value, '$[8]') < 0 THEN -1"
    " ELSE b.base_ns + json_extract(j.value, '$[7]') + json_extract(j.value, '$[8]') END,"
    " json_extract(j.value, '$[9]'), json_extract(j.value, '$[10]'),"
    " json_extract(j.value, '$[11]'), b.first_id + json_extract(j.value, '$[0]')"
    " FROM allocation_batches b, json_each(b.rows) j;";

// The allocations table as version 3 had it: one table clustered by
// (run, alloc_ns, id), every row (batched ones too) copied out of the view,
// no allocation_rows, allocation_batches or allocation_frees. Leaves user_version alone.
inline const char* kVersion3Allocations =
    "CREATE TABLE v3 (run INTEGER NOT NULL, addr INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " device INTEGER NOT NULL, stream INTEGER NOT NULL, thread INTEGER NOT NULL,"
    " api INTEGER NOT NULL, alloc_ns INTEGER NOT NULL, free_ns INTEGER NOT NULL,"
    " range INTEGER NOT NULL, step INTEGER NOT NULL, kind INTEGER NOT NULL, id INTEGER NOT NULL,"
    " PRIMARY KEY (run, alloc_ns, id)) WITHOUT ROWID;"
    "INSERT INTO v3 SELECT run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns,"
    " range, step, kind, id FROM allocations;"
    "DROP VIEW allocations; DROP TABLE allocation_rows; DROP TABLE allocation_batches;"
    " DROP TABLE allocation_frees; DROP TABLE allocation_batch_starts; ALTER TABLE v3 RENAME TO allocations;";

// The allocations table as versions 1 and 2 had it: a rowid table plus the
// (run, alloc_ns) index. Rows get rowid = id + 100 and are inserted in reverse
// id order, so that a reader ordering ties by anything but the rowid fails.
// Leaves user_version alone.
inline const char* kRowidAllocations =
    "CREATE TABLE old (run INTEGER NOT NULL, addr INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " device INTEGER NOT NULL, stream INTEGER NOT NULL, thread INTEGER NOT NULL,"
    " api INTEGER NOT NULL, alloc_ns INTEGER NOT NULL, free_ns INTEGER NOT NULL,"
    " range INTEGER NOT NULL, step INTEGER NOT NULL, kind INTEGER NOT NULL);"
    "INSERT INTO old (rowid, run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns,"
    " range, step, kind) SELECT id + 100, run, addr, bytes, device, stream, thread, api,"
    " alloc_ns, free_ns, range, step, kind FROM allocations ORDER BY id DESC;"
    "DROP VIEW allocations; DROP TABLE allocation_rows; DROP TABLE allocation_batches;"
    " DROP TABLE allocation_frees; DROP TABLE allocation_batch_starts; ALTER TABLE old RENAME TO allocations;"
    "CREATE INDEX allocations_time ON allocations (run, alloc_ns);";

}  // namespace gcprof::test
