//! The journal's and the snapshot's decoders on untrusted bytes (a damaged database or file):
//! never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = dexd_store::codec::decode_command(data);
    let _ = dexd_store::codec::decode_order(data);
    let _ = dexd_store::codec::decode_trade(data);
    let _ = dexd_store::codec::decode_transfer(data);
    let _ = dexd_store::codec::snapshot::decode_state(data);
    let _ = dexd_store::codec::snapshot::decode_resting_order(data);
    if let Some(header) = data.first_chunk() {
        let _ = dexd_store::codec::snapshot::section_header(header);
    }
    if let Ok(command) = dexd_store::codec::decode_command(data) {
        let encoded = dexd_store::codec::encode_command(&command);
        assert_eq!(dexd_store::codec::decode_command(&encoded).ok(), Some(command));
    }
});
