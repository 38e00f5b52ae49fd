//! The journal's and the snapshot's decoders on untrusted bytes (a damaged database or file):
//! never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = dexd::codec::decode_command(data);
    let _ = dexd::codec::decode_order(data);
    let _ = dexd::codec::decode_trade(data);
    let _ = dexd::codec::decode_transfer(data);
    let _ = dexd::codec::snapshot::decode_state(data);
    let _ = dexd::codec::snapshot::decode_resting_order(data);
    if let Some(header) = data.first_chunk() {
        let _ = dexd::codec::snapshot::section_header(header);
    }
    if let Ok(command) = dexd::codec::decode_command(data) {
        let encoded = dexd::codec::encode_command(&command);
        assert_eq!(dexd::codec::decode_command(&encoded).ok(), Some(command));
    }
});
