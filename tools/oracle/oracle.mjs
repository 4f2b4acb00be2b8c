// oracle.mjs — DuckDB as the independent Parquet implementation vla.c is
// checked against (tests/io/test_parquet_*.c run it through test_run()).
//
//   node oracle.mjs write-cases DIR [ROWS]  write DuckDB parquet files across codecs,
//                                     format versions, dictionary on/off, plus
//                                     parquet-wasm (arrow-rs) files with data
//                                     page v2, DELTA_BYTE_ARRAY, RLE booleans,
//                                     nested lists and NULLs (ROWS rows, default
//                                     5000; 12 made the fuzz seeds), each with the
//                                     values DuckDB reads back as DIR/<case>.json;
//                                     prints the case names, one per line
//   node oracle.mjs read FILE...      print each FILE's rows as one line of JSON:
//                                     {"columns":[...],"rows":[{...},...]}
//   node oracle.mjs read-arrow FILE...  the same through arrow-rs (parquet-wasm),
//                                     a second, stricter reader for vla.c's files
//   node oracle.mjs meta FILE         print per-chunk metadata (encodings, codec,
//                                     statistics) as DuckDB decodes it
//
// The expected values are always DuckDB's reading of the file, whoever wrote it.
// Value conventions shared with the C side: BIGINT may come as a decimal
// string, BLOB and FIXED_LEN_BYTE_ARRAY as upper-case hex, UUID as 32 upper-case hex
// digits without dashes.
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROWS = Number(process.argv[4] || 5000);
const QUERY = `
select
  case when i % 11 = 0 then null else (i * 7 - 20000)::int end as i32,
  (i::bigint * 1234567891 - 3000000000) as i64,
  case when i % 13 = 0 then null else (i % 100)::float / 8 end as f32,
  (i % 37)::double / 3 - 5 as f64,
  case when i % 17 = 0 then null else i % 3 = 0 end as b,
  'cat' || (i % 5) as s_dict,
  case when i % 19 = 0 then null else 'unique string ' || i end as s_uniq,
  case when i % 23 = 0 then null else ('blob' || i)::blob end as bin,
  case when i % 29 = 0 then null when i % 31 = 0 then []::float[]
       else [(i % 10)::float, case when i % 3 = 0 then null else 1.5 end, i::float / 4] end as lf,
  case when i % 7 = 0 then null else ['a' || (i % 3), 'b', repeat('x', i % 4)] end as ls,
  case when i % 5 = 0 then [[i, i + 1], [], null, [null]]::int[][] when i % 9 = 0 then null
       else [[i]]::int[][] end as lli,
  [i * 0.5, 1, 2, 3, 4, -i]::float[6] as fixed6,
  md5(i::varchar)::uuid as id,
  {'bytes': ('png' || i)::blob, 'path': case when i % 6 = 0 then null else 'frame_' || i || '.png' end} as img
from range(${ROWS}) t(i)`;

const CASES = [];
for (const version of ['V1', 'V2'])
  for (const codec of ['UNCOMPRESSED', 'SNAPPY', 'ZSTD', 'GZIP'])
    CASES.push({ name: `${codec.toLowerCase()}_${version.toLowerCase()}`, opts: `COMPRESSION ${codec}, PARQUET_VERSION ${version}` });
for (const version of ['V1', 'V2'])
  CASES.push({ name: `nodict_${version.toLowerCase()}`,
               opts: `COMPRESSION SNAPPY, PARQUET_VERSION ${version}, DICTIONARY_SIZE_LIMIT 1` });

// parquet-wasm (arrow-rs) writes what DuckDB does not: data page v2 headers,
// DELTA_BYTE_ARRAY strings, RLE-encoded booleans.
async function writeArrowRs(file, codec, dictionary) {
  const pw = await import('parquet-wasm/node');
  const arrow = await import('apache-arrow');
  const { vectorFromArray, tableToIPC, Table, List, Field, Float32, Int32, Utf8, Bool } = arrow;
  const i64 = new BigInt64Array(ROWS), f32 = new Float32Array(ROWS), f64 = new Float64Array(ROWS);
  const i32 = [], b = [], s = [], ls = [], lf = [];
  for (let i = 0; i < ROWS; i++) {
    i64[i] = BigInt(i) * 1234567891n - 3000000000n;
    f32[i] = (i % 100) / 8;
    f64[i] = (i % 37) / 3 - 5;
    i32.push(i % 11 == 0 ? null : i * 7 - 20000);
    b.push(i % 17 == 0 ? null : i % 3 == 0);
    s.push(i % 19 == 0 ? null : 'prefix-shared-' + Math.floor(i / 3));
    ls.push(i % 7 == 0 ? null : ['a' + (i % 3), 'b'.repeat(i % 4)]);
    lf.push(i % 29 == 0 ? null : i % 31 == 0 ? [] : [i % 10, i % 3 == 0 ? null : 1.5, i / 4]);
  }
  const table = new Table({
    i64: vectorFromArray(i64), f32: vectorFromArray(f32), f64: vectorFromArray(f64),
    i32: vectorFromArray(i32, new Int32()), b: vectorFromArray(b, new Bool()), s: vectorFromArray(s, new Utf8()),
    ls: vectorFromArray(ls, new List(new Field('element', new Utf8(), true))),
    lf: vectorFromArray(lf, new List(new Field('element', new Float32(), true))),
  });
  let props = new pw.WriterPropertiesBuilder().setCompression(pw.Compression[codec])
    .setWriterVersion(pw.WriterVersion.V2).setDataPageSizeLimit(4096).setDictionaryEnabled(dictionary);
  if (!dictionary)
    props = props.setColumnEncoding('s', pw.Encoding.DELTA_BYTE_ARRAY)
      .setColumnEncoding('i32', pw.Encoding.DELTA_BINARY_PACKED)
      .setColumnEncoding('f64', pw.Encoding.BYTE_STREAM_SPLIT);
  writeFileSync(file, pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(table, 'stream')), props.build()));
}

// Rows through arrow-rs: BIGINT as strings, binary as upper-case hex, lists as arrays.
async function readRowsArrow(file) {
  const pw = await import('parquet-wasm/node');
  const arrow = await import('apache-arrow');
  const t = arrow.tableFromIPC(pw.readParquet(readFileSync(file)).intoIPCStream());
  const conv = (v) => {
    if (v === null || v === undefined) return null;
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Uint8Array) return Buffer.from(v).toString('hex').toUpperCase();
    // a list value is an arrow Vector: get(i) honours its validity bitmap
    if (typeof v === 'object' && typeof v.get === 'function' && typeof v.length === 'number')
      return Array.from({ length: v.length }, (_, i) => conv(v.get(i)));
    return v;
  };
  const columns = t.schema.fields.map((f) => f.name);
  const rows = [];
  for (let i = 0; i < t.numRows; i++) {
    const o = {};
    for (const c of columns) o[c] = conv(t.getChild(c).get(i));
    rows.push(o);
  }
  return { columns, rows };
}

function jsonable(v) {
  return JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? x.toString() : x));
}

async function readRows(conn, file) {
  const esc = file.replace(/'/g, "''");
  const desc = (await conn.runAndReadAll(`describe select * from read_parquet('${esc}')`)).getRowObjectsJson();
  const sel = desc.map((d) => {
    const q = '"' + d.column_name.replace(/"/g, '""') + '"';
    if (d.column_type === 'BLOB') return `hex(${q}) as ${q}`;
    if (d.column_type === 'UUID') return `upper(replace(${q}::varchar, '-', '')) as ${q}`;
    const st = /^STRUCT\((.*)\)$/.exec(d.column_type);
    if (st && st[1].includes('BLOB')) { // a flat struct (LeRobot's image {bytes, path}): its blobs as hex
      const members = st[1].split(', ').map((f) => {
        const sp = f.lastIndexOf(' ');
        const name = f.slice(0, sp).replace(/^"|"$/g, '');
        const acc = `${q}."${name}"`;
        return `"${name}" := ${f.slice(sp + 1) === 'BLOB' ? `hex(${acc})` : acc}`;
      });
      return `struct_pack(${members.join(', ')}) as ${q}`;
    }
    return q;
  });
  const r = await conn.runAndReadAll(`select ${sel.join(', ')} from read_parquet('${esc}')`);
  return { columns: desc.map((d) => d.column_name), types: desc.map((d) => d.column_type), rows: r.getRowObjectsJson() };
}

const [cmd, ...args] = process.argv.slice(2);
const inst = await DuckDBInstance.create(':memory:');
const conn = await inst.connect();
if (cmd === 'write-cases') {
  const dir = args[0];
  for (const c of CASES) {
    const file = join(dir, c.name + '.parquet');
    await conn.run(`copy (${QUERY}) to '${file}' (format parquet, ${c.opts}, row_group_size 2048)`);
    writeFileSync(join(dir, c.name + '.json'), jsonable(await readRows(conn, file)));
    console.log(c.name);
  }
  for (const [codec, dict] of [['UNCOMPRESSED', false], ['SNAPPY', false], ['ZSTD', false], ['GZIP', false], ['SNAPPY', true]]) {
    const name = `arrowrs_${codec.toLowerCase()}_v2${dict ? '_dict' : ''}`;
    const file = join(dir, name + '.parquet');
    await writeArrowRs(file, codec, dict);
    writeFileSync(join(dir, name + '.json'), jsonable(await readRows(conn, file)));
    console.log(name);
  }
} else if (cmd === 'read') {
  for (const f of args) process.stdout.write(jsonable(await readRows(conn, f)) + '\n');
} else if (cmd === 'read-arrow') {
  for (const f of args) process.stdout.write(jsonable(await readRowsArrow(f)) + '\n');
} else if (cmd === 'meta') {
  const r = await conn.runAndReadAll(`select row_group_id, path_in_schema, type, encodings, compression, num_values,
      stats_min_value, stats_max_value, stats_null_count
      from parquet_metadata('${args[0].replace(/'/g, "''")}')`);
  process.stdout.write(jsonable(r.getRowObjectsJson()) + '\n');
} else {
  console.error('usage: node oracle.mjs write-cases DIR [ROWS] | read FILE... | read-arrow FILE... | meta FILE');
  process.exit(2);
}
