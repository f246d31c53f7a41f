// A GGUF front parser for the browser: header, metadata and tensor table, read
// from a growing prefix of the file (File.slice, 1 MiB first, doubling until the
// front fits), so a file of many GB opens in milliseconds and nothing is sent
// anywhere. Long arrays (the vocabulary's strings, merges) are skipped over —
// each string's length is read, its bytes are not decoded — and keep their
// place in the file so the page can read them by page later.
//
// The result has the shape of the server's POST /explore/open, so the page
// treats a dropped file and a server model alike. Every count, length and
// type is checked; an error names the field and the byte offset.

export const VALUE_TYPES = ["u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"];
const VALUE_SIZE = { u8: 1, i8: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, bool: 1, u64: 8, i64: 8, f64: 8 };

// ggml types: id -> [name, elements per block, bytes per block] (as kiln's type table).
export const GGML_TYPES = {
  0: ["F32", 1, 4], 1: ["F16", 1, 2], 2: ["Q4_0", 32, 18], 3: ["Q4_1", 32, 20], 6: ["Q5_0", 32, 22], 7: ["Q5_1", 32, 24],
  8: ["Q8_0", 32, 34], 9: ["Q8_1", 32, 36], 10: ["Q2_K", 256, 84], 11: ["Q3_K", 256, 110], 12: ["Q4_K", 256, 144],
  13: ["Q5_K", 256, 176], 14: ["Q6_K", 256, 210], 15: ["Q8_K", 256, 292], 16: ["IQ2_XXS", 256, 66], 17: ["IQ2_XS", 256, 74],
  18: ["IQ3_XXS", 256, 98], 19: ["IQ1_S", 256, 50], 20: ["IQ4_NL", 32, 18], 21: ["IQ3_S", 256, 110], 22: ["IQ2_S", 256, 82],
  23: ["IQ4_XS", 256, 136], 24: ["I8", 1, 1], 25: ["I16", 1, 2], 26: ["I32", 1, 4], 27: ["I64", 1, 8], 28: ["F64", 1, 8],
  29: ["IQ1_M", 256, 56], 30: ["BF16", 1, 2], 34: ["TQ1_0", 256, 54], 35: ["TQ2_0", 256, 66], 39: ["MXFP4", 32, 17],
  40: ["NVFP4", 64, 36], 41: ["Q1_0", 128, 18],
};

export const PREVIEW = 32;           // elements of a string array decoded while parsing
export const WHOLE_NUMERIC = 4096;   // numeric arrays up to this long are decoded whole (per-layer values)
const FIRST_READ = 1 << 20;
const MAX_DIMS = 4;

class NeedMore extends Error {
  constructor(bytes) { super("need " + bytes + " bytes"); this.bytes = bytes; }
}
export class GGUFError extends Error {}

// A cursor over the bytes read so far.
class Cursor {
  constructor(buf, fileSize) {
    this.view = new DataView(buf);
    this.bytes = new Uint8Array(buf);
    this.pos = 0;
    this.fileSize = fileSize;
    this.dec = new TextDecoder("utf-8");
  }
  need(n, what) {
    const end = this.pos + n;
    if (end > this.fileSize) throw new GGUFError(`${what}: needs ${n} bytes at offset ${this.pos}, past the end of the file (${this.fileSize} bytes)`);
    if (end > this.bytes.length) throw new NeedMore(end);
  }
  u32(what) { this.need(4, what); const v = this.view.getUint32(this.pos, true); this.pos += 4; return v; }
  u64(what) {
    this.need(8, what);
    // Two 32-bit halves (BigInt is slow in the vocabulary's loop); above 2^53 is an error.
    const lo = this.view.getUint32(this.pos, true), hi = this.view.getUint32(this.pos + 4, true);
    if (hi >= 0x200000) throw new GGUFError(`${what}: ${this.view.getBigUint64(this.pos, true)} at offset ${this.pos} is too large`);
    this.pos += 8;
    return hi * 4294967296 + lo;
  }
  str(what) {
    const start = this.pos;
    const n = this.u64(what + " (string length)");
    if (n > this.fileSize) throw new GGUFError(`${what}: string length ${n} at offset ${start} exceeds the file size`);
    this.need(n, what);
    const s = this.dec.decode(this.bytes.subarray(this.pos, this.pos + n));
    this.pos += n;
    return s;
  }
  skipStr(what) {
    const start = this.pos;
    const n = this.u64(what + " (string length)");
    if (n > this.fileSize) throw new GGUFError(`${what}: string length ${n} at offset ${start} exceeds the file size`);
    this.need(n, what);
    this.pos += n;
  }
  scalar(type, what) {
    const size = VALUE_SIZE[type];
    this.need(size, what);
    const v = this.view, p = this.pos;
    let x;
    switch (type) {
      case "u8": x = v.getUint8(p); break;
      case "i8": x = v.getInt8(p); break;
      case "u16": x = v.getUint16(p, true); break;
      case "i16": x = v.getInt16(p, true); break;
      case "u32": x = v.getUint32(p, true); break;
      case "i32": x = v.getInt32(p, true); break;
      case "f32": x = v.getFloat32(p, true); break;
      case "bool": {
        const b = v.getUint8(p);
        if (b > 1) throw new GGUFError(`${what}: bool byte ${b} at offset ${p} is neither 0 nor 1`);
        x = b === 1; break;
      }
      case "u64": x = Number(v.getBigUint64(p, true)); break;
      case "i64": x = Number(v.getBigInt64(p, true)); break;
      case "f64": x = v.getFloat64(p, true); break;
    }
    this.pos += size;
    return x;
  }
  valueType(what) {
    const at = this.pos;
    const id = this.u32(what);
    const t = VALUE_TYPES[id];
    if (!t) throw new GGUFError(`${what}: unknown value type ${id} at offset ${at}`);
    return t;
  }
}

// One value of `type`; arrays keep PREVIEW elements and their place in the file.
function readValue(c, type, what, depth = 0) {
  if (type === "string") return { value: c.str(what) };
  if (type !== "array") return { value: c.scalar(type, what) };
  if (depth > 2) throw new GGUFError(`${what}: arrays nested too deep`);
  const elem = c.valueType(what + " (element type)");
  const count = c.u64(what + " (element count)");
  const offset = c.pos;
  const values = [];
  if (elem === "string") {
    // Every string has at least its 8-byte length: ask for that much at once, so
    // a large vocabulary grows the prefix in one step, not in many restarts.
    c.need(count * 8, what);
    for (let i = 0; i < count; i++) {
      if (i < PREVIEW) values.push(c.str(`${what}[${i}]`));
      else c.skipStr(`${what}[${i}]`);
    }
  } else if (elem === "array") {
    for (let i = 0; i < count; i++) {
      const v = readValue(c, "array", `${what}[${i}]`, depth + 1);
      if (i < PREVIEW) values.push(`[${v.elem_type} × ${v.count}]`);
    }
  } else {
    const size = VALUE_SIZE[elem];
    if (count * size > c.fileSize) throw new GGUFError(`${what}: ${count} elements of ${elem} exceed the file size`);
    const keep = count <= WHOLE_NUMERIC ? count : PREVIEW;
    for (let i = 0; i < keep; i++) values.push(c.scalar(elem, `${what}[${i}]`));
    const rest = (count - keep) * size;
    c.need(rest, what);
    c.pos += rest;
  }
  return { elem_type: elem, count, values, offset, end: c.pos };
}

function parseFront(buf, fileSize) {
  const c = new Cursor(buf, fileSize);
  const magic = c.u32("magic");
  if (magic !== 0x46554747) {
    const b = [magic & 255, (magic >> 8) & 255, (magic >> 16) & 255, magic >>> 24].map(x => x.toString(16).padStart(2, "0")).join(" ");
    throw new GGUFError(`not a GGUF file: the first four bytes are ${b}, expected 47 47 55 46 ("GGUF")`);
  }
  const version = c.u32("version");
  if (version !== 2 && version !== 3) throw new GGUFError(`GGUF version ${version} is not supported (2 and 3 are)`);
  const nTensors = c.u64("tensor_count");
  const nKv = c.u64("metadata_kv_count");
  // Each entry takes at least 8 + 4 bytes: counts beyond that are corrupt.
  if (nKv * 12 > fileSize) throw new GGUFError(`metadata_kv_count ${nKv} cannot fit in ${fileSize} bytes`);
  if (nTensors * 24 > fileSize) throw new GGUFError(`tensor_count ${nTensors} cannot fit in ${fileSize} bytes`);
  const metadata = [];
  const seen = new Set();
  for (let i = 0; i < nKv; i++) {
    const key = c.str(`metadata key #${i}`);
    if (seen.has(key)) throw new GGUFError(`metadata key '${key}' appears twice`);
    seen.add(key);
    const type = c.valueType(`metadata '${key}' (type)`);
    const v = readValue(c, type, `metadata '${key}'`);
    metadata.push({ key, type, ...v });
  }
  const md = Object.fromEntries(metadata.map(e => [e.key, e]));
  let alignment = 32;
  if (md["general.alignment"]) {
    alignment = md["general.alignment"].value;
    if (md["general.alignment"].type !== "u32" || !alignment || (alignment & (alignment - 1)))
      throw new GGUFError(`metadata 'general.alignment': expected a u32 power of two, found ${alignment}`);
  }
  const tensors = [];
  const names = new Set();
  for (let i = 0; i < nTensors; i++) {
    const name = c.str(`tensor #${i} name`);
    if (names.has(name)) throw new GGUFError(`tensor '${name}' appears twice`);
    names.add(name);
    const nDims = c.u32(`tensor '${name}' n_dims`);
    if (nDims < 1 || nDims > MAX_DIMS) throw new GGUFError(`tensor '${name}': ${nDims} dimensions (1 to ${MAX_DIMS} allowed)`);
    const shape = [];
    for (let d = 0; d < nDims; d++) shape.push(c.u64(`tensor '${name}' dim ${d}`));
    const typeId = c.u32(`tensor '${name}' type`);
    const t = GGML_TYPES[typeId];
    if (!t) throw new GGUFError(`tensor '${name}': unknown ggml type ${typeId}`);
    const offset = c.u64(`tensor '${name}' offset`);
    if (shape[0] % t[1]) throw new GGUFError(`tensor '${name}': row of ${shape[0]} elements is not a whole number of ${t[0]} blocks (${t[1]})`);
    const elements = shape.reduce((a, b) => a * b, 1);
    const bytes = elements / t[1] * t[2];
    if (offset % alignment) throw new GGUFError(`tensor '${name}': offset ${offset} is not a multiple of the alignment ${alignment}`);
    tensors.push({ name, type: t[0], type_id: typeId, shape, offset, bytes, elements, shard: 0 });
  }
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  for (const t of tensors)
    if (dataOffset + t.offset + t.bytes > fileSize)
      throw new GGUFError(`tensor '${t.name}': data [${t.offset}, ${t.offset + t.bytes}) runs past the end of the file`);
  return { version, alignment, data_offset: dataOffset, front_bytes: c.pos, metadata, tensors };
}

// Parses a File (or Blob). Returns the front and how many bytes it read.
export async function parseFile(file, onProgress) {
  let n = Math.min(FIRST_READ, file.size);
  let read = 0;
  for (;;) {
    const buf = await file.slice(0, n).arrayBuffer();
    read += buf.byteLength;
    try {
      const front = parseFront(buf, file.size);
      return { ...front, file: file.name, file_size: file.size, n_shards: 1, front_bytes_read: read, prefix_bytes: n };
    } catch (e) {
      if (!(e instanceof NeedMore)) throw e;
      n = Math.min(file.size, Math.max(2 * n, e.bytes));
      if (onProgress) onProgress(n);
    }
  }
}

// Elements [from, from + count) of an array entry of a dropped file (read from the file).
export async function readArrayPage(file, entry, from, count) {
  const end = Math.min(entry.count, from + count);
  if (from >= end) return [];
  const size = VALUE_SIZE[entry.elem_type];
  if (size) {
    const buf = await file.slice(entry.offset + from * size, entry.offset + end * size).arrayBuffer();
    const c = new Cursor(buf, buf.byteLength);
    const out = [];
    for (let i = from; i < end; i++) out.push(c.scalar(entry.elem_type, `element ${i}`));
    return out;
  }
  if (entry.elem_type !== "string") return [];
  // Strings: walk from the array's start (their lengths vary).
  const buf = await file.slice(entry.offset, entry.end).arrayBuffer();
  const c = new Cursor(buf, buf.byteLength);
  const out = [];
  for (let i = 0; i < end; i++) {
    if (i < from) c.skipStr(`element ${i}`);
    else out.push(c.str(`element ${i}`));
  }
  return out;
}

// ---------- the model card (the facts `kiln inspect --json` prints) ----------

function num(md, key) {
  const e = md[key];
  if (!e) return null;
  if (e.type === "array") return null;
  return typeof e.value === "number" ? e.value : null;
}
// A per-layer value: an array (whole: numeric arrays of up to WHOLE_NUMERIC are), or one scalar.
function perLayer(md, key) {
  const e = md[key];
  if (!e) return [];
  if (e.type === "array") return e.values.length === e.count ? e.values : [];
  return [e.value];
}

const FILE_TYPES = {
  0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M",
  13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS",
  21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
  29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
};

export function modelCard(front) {
  const md = Object.fromEntries(front.metadata.map(e => [e.key, e]));
  const s = k => (md[k] && md[k].type === "string" ? md[k].value : "");
  const arch = s("general.architecture");
  const a = arch + ".";
  const nHead = perLayer(md, a + "attention.head_count");
  let nHeadKv = perLayer(md, a + "attention.head_count_kv");
  if (!nHeadKv.length) nHeadKv = nHead;
  const nEmbd = num(md, a + "embedding_length");
  let headK = num(md, a + "attention.key_length");
  if (headK === null && nEmbd && nHead.length && nHead[0] > 0) headK = Math.floor(nEmbd / nHead[0]);
  const headV = num(md, a + "attention.value_length") ?? headK;
  const tokens = md["tokenizer.ggml.tokens"];
  const typeMix = {};
  let nParams = 0, dataBytes = 0;
  for (const t of front.tensors) {
    nParams += t.shape.reduce((x, y) => x * y, 1);
    dataBytes += t.bytes;
    const u = typeMix[t.type] || (typeMix[t.type] = { tensors: 0, bytes: 0 });
    u.tensors++;
    u.bytes += t.bytes;
  }
  const ft = num(md, "general.file_type");
  return {
    architecture: arch,
    name: s("general.name"),
    size_label: s("general.size_label"),
    file_type: ft === null ? "" : FILE_TYPES[ft] || "",
    n_layer: num(md, a + "block_count"),
    n_embd: nEmbd,
    n_head: nHead,
    n_head_kv: nHeadKv,
    head_dim_k: headK,
    head_dim_v: headV,
    n_ff: perLayer(md, a + "feed_forward_length"),
    n_ctx_train: num(md, a + "context_length"),
    rope: { freq_base: num(md, a + "rope.freq_base"), dims: num(md, a + "rope.dimension_count"),
            scaling: s(a + "rope.scaling.type") || "none", scaling_factor: num(md, a + "rope.scaling.factor") },
    sliding_window: num(md, a + "attention.sliding_window"),
    n_expert: num(md, a + "expert_count"),
    n_expert_used: num(md, a + "expert_used_count"),
    tokenizer: { model: s("tokenizer.ggml.model"), pre: s("tokenizer.ggml.pre"),
                 n_vocab: tokens && tokens.type === "array" ? tokens.count : 0 },
    chat_template: md["tokenizer.chat_template"] ? { bytes: new TextEncoder().encode(md["tokenizer.chat_template"].value).length } : null,
    file_size: front.file_size,
    n_tensors: front.tensors.length,
    n_params: nParams,
    bits_per_weight: nParams ? 8 * dataBytes / nParams : 0,
    type_mix: typeMix,
  };
}

// The layer a tensor belongs to ("blk.N." names) and its role in it.
export function tensorPlace(name) {
  const m = /^blk\.(\d+)\.(.+)$/.exec(name);
  if (m) return { layer: +m[1], role: m[2].replace(/\.(weight|bias)$/, "") };
  return { layer: null, role: name.replace(/\.(weight|bias)$/, "") };
}
