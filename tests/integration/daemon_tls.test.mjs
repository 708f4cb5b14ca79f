// Integration: runboxd's thread-local storage stays small. Every thread of a process gets its
// own copy of each _Thread_local object, set up (and so touched) when the thread starts, and
// runboxd runs 320 civetweb workers by default: a 64 KiB thread-local buffer cost 20 MiB of RSS
// before anyone called anything. This reads the PT_TLS program header of the built binary.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const PT_TLS = 7;
const LIMIT = 4096; // bytes of thread-local storage per thread

function tlsSize(file) {
  const elf = readFileSync(file);
  assert.equal(elf.readUInt32BE(0), 0x7f454c46, `${file} is not an ELF file`);
  assert.equal(elf[4], 2, 'a 64-bit ELF file');
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize;
    if (elf.readUInt32LE(ph) === PT_TLS) return Number(elf.readBigUInt64LE(ph + 0x28));
  }
  return 0;
}

test(`runboxd's thread-local storage is at most ${LIMIT} bytes per thread`, () => {
  const bin = process.env.RUNBOXD;
  assert.ok(bin, 'RUNBOXD is not set (ctest sets it)');
  const size = tlsSize(bin);
  assert.ok(size <= LIMIT,
            `runboxd has ${size} bytes of _Thread_local data per thread (x 320 workers); ` +
            'keep big buffers on the stack or in the object that owns the thread');
});
