// Where a rejected queue-file entry is in the file's text (the Problems panel's range): array
// elements, a single object, JSON Lines lines, and a named field inside the entry.
import * as assert from 'node:assert/strict';
import { entryRange } from '../../src/extension/queueFileRanges';

function at(text: string, jsonLines: boolean, entry: number | null, field?: string): string | undefined {
  const r = entryRange(text, jsonLines, entry, field);
  return r && text.slice(r.start, r.end);
}

describe('queue file entry ranges', () => {
  const array = '[\n  { "command": "echo [a], {b}", "id": "x" },\n  { "id": "y\\"]", "comand": "ls" }\n]\n';

  it('finds the n-th element of a top-level array, past brackets and quotes inside strings', () => {
    assert.equal(at(array, false, 0), '{ "command": "echo [a], {b}", "id": "x" }');
    assert.equal(at(array, false, 1), '{ "id": "y\\"]", "comand": "ls" }');
    assert.equal(at(array, false, 2), undefined);
  });

  it('narrows to the named field, or keeps the entry when the field is not there', () => {
    assert.equal(at(array, false, 1, 'comand'), '"comand"');
    assert.equal(at(array, false, 0, 'cwd'), '{ "command": "echo [a], {b}", "id": "x" }');
  });

  it('takes a single object as entry 0, and a JSON Lines entry as its line', () => {
    assert.equal(at('\uFEFF {"command":"a","cwd":".."}\n', false, 0, 'cwd'), '"cwd"');
    const lines = '{"command":"a"}\n\n  {"command":"b","runAt":"soon"}  \n';
    assert.equal(at(lines, true, 2), '{"command":"b","runAt":"soon"}');
    assert.equal(at(lines, true, 2, 'runAt'), '"runAt"');
    assert.equal(at(lines, true, 5), undefined);
  });

  it('has no range for a rejection of the file as a whole', () => {
    assert.equal(at(array, false, null), undefined);
  });
});
