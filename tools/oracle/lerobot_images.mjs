// lerobot_images.mjs — write one LeRobot episode whose camera is an `image`
// feature, as the HF `datasets` Image() type stores it: a struct
// {bytes: BLOB, path: VARCHAR} column holding PNG bytes (DuckDB writes it,
// so the struct layout is an independent implementation's). Used by
// tests/data/test_lerobot_write.c.
//
//   node lerobot_images.mjs OUT.parquet KEY FPS PNG...
//
// Row i holds PNG i, timestamp i/FPS, frame_index = index = i, episode 0, task 0.
import { DuckDBInstance } from '@duckdb/node-api';

const [out, key, fps, ...pngs] = process.argv.slice(2);
if (!out || !key || !fps || pngs.length === 0) {
  console.error('usage: node lerobot_images.mjs OUT.parquet KEY FPS PNG...');
  process.exit(2);
}
const q = (s) => s.replace(/'/g, "''");
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const values = pngs.map((p, i) => `(${i}, '${q(p)}')`).join(', ');
await conn.run(`create table f(i bigint, p varchar); insert into f values ${values}`);
await conn.run(`copy (
  select {'bytes': b.content, 'path': null::varchar} as "${key.replace(/"/g, '""')}",
         (f.i::double / ${Number(fps)})::float as timestamp, f.i as frame_index, 0::bigint as episode_index,
         f.i as index, 0::bigint as task_index
  from f join read_blob([${pngs.map((p) => `'${q(p)}'`).join(', ')}]) b on b.filename = f.p
  order by f.i) to '${q(out)}' (format parquet, compression snappy)`);
