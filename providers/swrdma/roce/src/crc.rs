//! CRC-32 of IEEE 802.3 (polynomial 0x04C11DB7, bit-reflected: 0xEDB88320),
//! as a bare register: no initial value and no final complement are applied
//! here (the caller chooses both), exactly like the kernel's `crc32_le`.
//!
//! Besides the update (`crc32fast`: carry-less multiplication), the GF(2) arithmetic needed to
//! move a register across a run of zero bytes without feeding them: in the
//! reflected representation a register is a polynomial of degree < 32 whose
//! x^0 coefficient is bit 31, and feeding `n` zero bytes multiplies it by
//! x^(8n) modulo the polynomial.

/// The reflected polynomial.
pub const POLY: u32 = 0xEDB8_8320;

/// Feeds `data` into the register `crc`.  `crc32fast` keeps the
/// complemented register (it applies the CRC-32/ISO-HDLC initial value and
/// final complement itself), hence the two complements: the bare register
/// in, the bare register out.  It folds 64 bytes at a time with carry-less
/// multiplication (PCLMULQDQ) where the CPU has it (checked at run time),
/// else slicing by 16.
pub fn update(crc: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(!crc);
    h.update(data);
    !h.finalize()
}

/// The register after feeding `data` one byte at a time starting from
/// `crc` (a compile-time usable, table-free form).
pub const fn update_const(mut crc: u32, data: &[u8]) -> u32 {
    let mut i = 0;
    while i < data.len() {
        crc ^= data[i] as u32;
        let mut k = 0;
        while k < 8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ POLY } else { crc >> 1 };
            k += 1;
        }
        i += 1;
    }
    crc
}

/// a(x) * b(x) mod P(x), reflected representation.
pub fn mul_mod(a: u32, mut b: u32) -> u32 {
    let mut prod = 0u32;
    let mut bit = 1u32 << 31; // x^0
    while bit != 0 {
        if a & bit != 0 {
            prod ^= b;
        }
        // b *= x
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        bit >>= 1;
    }
    prod
}

/// x^(8n) mod P(x): the operator "feed n zero bytes" (multiply a register by it).
pub fn x_pow_8n(mut n: u64) -> u32 {
    let mut result = 1u32 << 31; // x^0
    let mut base = 1u32 << (31 - 8); // x^8
    while n != 0 {
        if n & 1 != 0 {
            result = mul_mod(result, base);
        }
        base = mul_mod(base, base);
        n >>= 1;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_check_value() {
        // CRC-32/ISO-HDLC check value: init !0, final complement, "123456789" -> 0xCBF43926.
        assert_eq!(!update(!0, b"123456789"), 0xCBF4_3926);
        assert_eq!(!update_const(!0, b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn fast_equals_bytewise() {
        let data: Vec<u8> = (0..1000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for start in 0..17 {
            for end in [
                start,
                start + 1,
                start + 7,
                start + 8,
                start + 9,
                63,
                64,
                65,
                100,
                127,
                128,
                129,
                999,
                1000,
            ] {
                let s = &data[start..end.max(start)];
                assert_eq!(update(0x1234_5678, s), update_const(0x1234_5678, s));
            }
        }
    }

    #[test]
    fn zero_shift_operator_equals_feeding_zeros() {
        let zeros = vec![0u8; 5000];
        for &reg in &[1u32, 0x8000_0000, 0xDEAD_BEEF, 0xFFFF_FFFF, 0x0102_0304] {
            for &n in &[0usize, 1, 2, 3, 7, 8, 64, 1000, 4097, 5000] {
                assert_eq!(
                    mul_mod(x_pow_8n(n as u64), reg),
                    update(reg, &zeros[..n]),
                    "reg {reg:#x} n {n}"
                );
            }
        }
    }
}
