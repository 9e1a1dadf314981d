//! ONNX's protobuf messages, written by hand: the few fields a model file
//! needs (`onnx.proto`'s numbers), in protobuf's wire format. Writing is
//! all the exporter does with them, so this is smaller than a schema
//! compiler's output and adds no dependency.

/// A message being written.
#[derive(Default)]
pub struct Message(Vec<u8>);

impl Message {
    pub fn new() -> Self {
        Message(Vec::new())
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    /// An `int64` or `int32` field (negative values as ten bytes, as
    /// protobuf writes them).
    pub fn int(&mut self, field: u32, v: i64) {
        self.key(field, 0);
        self.varint(v as u64);
    }

    /// A `float` field.
    pub fn float(&mut self, field: u32, v: f32) {
        self.key(field, 5);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    /// A `bytes` or `string` field.
    pub fn bytes(&mut self, field: u32, v: &[u8]) {
        self.key(field, 2);
        self.varint(v.len() as u64);
        self.0.extend_from_slice(v);
    }

    pub fn string(&mut self, field: u32, v: &str) {
        self.bytes(field, v.as_bytes());
    }

    /// An embedded message.
    pub fn message(&mut self, field: u32, m: Message) {
        self.bytes(field, &m.0);
    }

    /// A packed `repeated int64`.
    pub fn packed_ints(&mut self, field: u32, vs: &[i64]) {
        let mut m = Message::new();
        for &v in vs {
            m.varint(v as u64);
        }
        self.bytes(field, &m.0);
    }
}

/// `ModelProto`.
pub mod model {
    pub const IR_VERSION: u32 = 1;
    pub const PRODUCER_NAME: u32 = 2;
    pub const PRODUCER_VERSION: u32 = 3;
    pub const GRAPH: u32 = 7;
    pub const OPSET_IMPORT: u32 = 8;
}

/// `OperatorSetIdProto`.
pub mod opset {
    pub const DOMAIN: u32 = 1;
    pub const VERSION: u32 = 2;
}

/// `GraphProto`.
pub mod graph {
    pub const NODE: u32 = 1;
    pub const NAME: u32 = 2;
    pub const INITIALIZER: u32 = 5;
    pub const INPUT: u32 = 11;
    pub const OUTPUT: u32 = 12;
}

/// `NodeProto`.
pub mod node {
    pub const INPUT: u32 = 1;
    pub const OUTPUT: u32 = 2;
    pub const NAME: u32 = 3;
    pub const OP_TYPE: u32 = 4;
    pub const ATTRIBUTE: u32 = 5;
}

/// `AttributeProto` and its `AttributeType` codes.
pub mod attribute {
    pub const NAME: u32 = 1;
    pub const F: u32 = 2;
    pub const I: u32 = 3;
    pub const S: u32 = 4;
    pub const T: u32 = 5;
    pub const INTS: u32 = 8;
    pub const TYPE: u32 = 20;

    pub const TYPE_FLOAT: i64 = 1;
    pub const TYPE_INT: i64 = 2;
    pub const TYPE_STRING: i64 = 3;
    pub const TYPE_TENSOR: i64 = 4;
    pub const TYPE_INTS: i64 = 7;
}

/// `TensorProto`.
pub mod tensor {
    pub const DIMS: u32 = 1;
    pub const DATA_TYPE: u32 = 2;
    pub const NAME: u32 = 8;
    pub const RAW_DATA: u32 = 9;
}

/// `ValueInfoProto`, `TypeProto`, `TypeProto.Tensor`, `TensorShapeProto`
/// and its `Dimension`.
pub mod value_info {
    pub const NAME: u32 = 1;
    pub const TYPE: u32 = 2;
    pub const TYPE_TENSOR: u32 = 1;
    pub const TENSOR_ELEM_TYPE: u32 = 1;
    pub const TENSOR_SHAPE: u32 = 2;
    pub const SHAPE_DIM: u32 = 1;
    pub const DIM_VALUE: u32 = 1;
    pub const DIM_PARAM: u32 = 2;
}

#[cfg(test)]
mod tests {
    use super::Message;

    #[test]
    fn varints_and_keys_are_protobufs() {
        let mut m = Message::new();
        m.int(1, 150);
        assert_eq!(m.into_bytes(), [0x08, 0x96, 0x01]);
        let mut m = Message::new();
        m.int(2, -1);
        assert_eq!(m.into_bytes(), [0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        let mut m = Message::new();
        m.string(2, "testing");
        assert_eq!(m.into_bytes(), [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']);
        let mut m = Message::new();
        m.float(2, 1.0);
        assert_eq!(m.into_bytes(), [0x15, 0x00, 0x00, 0x80, 0x3f]);
        let mut m = Message::new();
        m.packed_ints(4, &[3, 270]);
        assert_eq!(m.into_bytes(), [0x22, 0x03, 0x03, 0x8e, 0x02]);
    }
}
