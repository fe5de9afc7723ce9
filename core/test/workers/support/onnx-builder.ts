/**
 * Builds tiny ONNX models byte by byte (protobuf wire format of onnx.proto3),
 * so tests can exercise model loading and layout detection without shipping
 * binary fixtures. Only what the tests need: one float input, one float
 * output, made by an Identity of the input or by a Constant.
 */

function varint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

function field(number: number, wireType: 0 | 2, payload: number[] | Uint8Array | number): number[] {
  const key = varint((number << 3) | wireType);
  if (wireType === 0) return [...key, ...varint(payload as number)];
  const bytes = payload instanceof Uint8Array ? [...payload] : (payload as number[]);
  return [...key, ...varint(bytes.length), ...bytes];
}

const text = (s: string) => [...new TextEncoder().encode(s)];

function valueInfo(name: string, dims: readonly (number | string)[]): number[] {
  // Dimension: dim_value (1) for a size, dim_param (2) for a symbolic name.
  const shape = dims.flatMap((d) => field(1, 2, typeof d === 'number' ? field(1, 0, d) : field(2, 2, text(d))));
  const tensorType = [...field(1, 0, 1), ...field(2, 2, shape)]; // elem_type FLOAT
  return [...field(1, 2, text(name)), ...field(2, 2, field(1, 2, tensorType))];
}

function model(
  nodes: number[][],
  inputDims: readonly (number | string)[],
  outputDims: readonly (number | string)[],
): Uint8Array {
  const graph = [
    ...nodes.flatMap((n) => field(1, 2, n)),
    ...field(2, 2, text('g')),
    ...field(11, 2, valueInfo('images', inputDims)),
    ...field(12, 2, valueInfo('output', outputDims)),
  ];
  const opset = [...field(1, 2, text('')), ...field(2, 0, 13)];
  return new Uint8Array([...field(1, 0, 8), ...field(7, 2, graph), ...field(8, 2, opset)]);
}

/** A model whose output is its input (`[1, 3, size, size]`): a shape no YOLO layout has. */
export function identityModel(size: number): Uint8Array {
  const node = [...field(1, 2, text('images')), ...field(2, 2, text('output')), ...field(4, 2, text('Identity'))];
  return model([node], [1, 3, size, size], [1, 3, size, size]);
}

/**
 * A model with a `[1, 3, size, size]` input (ignored) that always outputs
 * `values` with shape `outputDims` (a Constant node).
 */
export function constantModel(size: number, outputDims: readonly number[], values: Float32Array): Uint8Array {
  const raw = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const tensor = [...outputDims.flatMap((d) => field(1, 0, d)), ...field(2, 0, 1), ...field(9, 2, raw)];
  const attribute = [...field(1, 2, text('value')), ...field(5, 2, tensor), ...field(20, 0, 4)];
  const node = [...field(2, 2, text('output')), ...field(4, 2, text('Constant')), ...field(5, 2, attribute)];
  return model([node], [1, 3, size, size], outputDims);
}

/**
 * A model with input `[1, 3, height, width]` (symbolic names where given as strings) whose output is
 * the input reshaped to `shape` (a Reshape by an int64 Constant; `-1` takes the rest): with a fixed
 * `shape` it runs only where the input has exactly that many values.
 */
export function reshapeModel(
  inputDims: readonly (number | string)[],
  shape: readonly number[],
  outputDims: readonly (number | string)[],
): Uint8Array {
  const raw = new Uint8Array(new BigInt64Array(shape.map((v) => BigInt(v))).buffer);
  const tensor = [...field(1, 0, shape.length), ...field(2, 0, 7), ...field(9, 2, raw)]; // INT64
  const attribute = [...field(1, 2, text('value')), ...field(5, 2, tensor), ...field(20, 0, 4)];
  const constant = [...field(2, 2, text('shape')), ...field(4, 2, text('Constant')), ...field(5, 2, attribute)];
  const reshape = [
    ...field(1, 2, text('images')),
    ...field(1, 2, text('shape')),
    ...field(2, 2, text('output')),
    ...field(4, 2, text('Reshape')),
  ];
  return model([constant, reshape], inputDims, outputDims);
}
