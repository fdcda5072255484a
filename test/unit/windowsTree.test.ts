// Reading WMIC's process table, which the Windows tree end falls back on (windowsTree.ts). Runs
// here on Linux from recorded output; test/windows runs the whole thing on Windows' Node.
import assert from 'node:assert/strict';
import { descendants, parseProcessTable } from '../../src/core/launching/windowsTree';

const utf16 = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);

describe('windowsTree: the process table from WMIC', () => {
  it('reads Windows\' spelling, in UTF-16 with its padding', () => {
    const table = parseProcessTable(utf16('ParentProcessId  ProcessId  \r\r\n0                0          \r\r\n0                4          \r\r\n4                380        \r\r\n380              404        \r\r\n\r\r\n'));
    assert.deepEqual([...table!], [[0, 0], [4, 0], [380, 4], [404, 380]]);
  });

  it('reads Wine\'s spelling: no space between the names, its own case', () => {
    const table = parseProcessTable(utf16('ParentProcessIDProcessID\r\n40   56   \r\n300  380  \r\n380  404  \r\n'));
    assert.deepEqual([...table!], [[56, 40], [380, 300], [404, 380]]);
  });

  it('takes the columns in the order the header gives them', () => {
    const table = parseProcessTable(Buffer.from('ProcessId  ParentProcessId\n404        380\n'));
    assert.deepEqual([...table!], [[404, 380]]);
  });

  it('says it cannot read a table without both columns', () => {
    assert.equal(parseProcessTable(utf16('No Instance(s) Available.\r\n')), null);
    assert.equal(parseProcessTable(Buffer.alloc(0)), null);
  });

  it('walks the tree below a process, through parents that are gone, and never up or sideways', () => {
    // 300 runs 380 (gone now), whose children 404 and 396 remain; 404 started 500. 0 is its own parent.
    const parents = new Map([[0, 0], [300, 4], [404, 380], [396, 380], [500, 404], [600, 300]]);
    assert.deepEqual(descendants(380, parents).sort(), [396, 404, 500]);
    assert.deepEqual(descendants(500, parents), []);
    assert.deepEqual(descendants(0, parents), [], 'the idle process is nobody\'s parent');
  });
});
