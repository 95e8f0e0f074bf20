//! The protocol's codec with small buffers: health messages are a few bytes, and tonic's
//! default of 8 KiB per call would be most of what each open `Watch` stream costs.

use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstDecoder, ProstEncoder};

/// Bytes a call's encoder or decoder starts with (and grows from, for a larger message).
const BUFFER: usize = 128;
/// When an encoded stream yields to the transport.
const YIELD_THRESHOLD: usize = 32 * 1024;

/// `application/grpc+proto` through prost, with [`BUFFER`]-byte buffers.
#[derive(Debug, Clone)]
pub(crate) struct HealthCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for HealthCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for HealthCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::new(BufferSettings::new(BUFFER, YIELD_THRESHOLD))
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder::new(BufferSettings::new(BUFFER, YIELD_THRESHOLD))
    }
}
