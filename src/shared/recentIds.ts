// The log entry ids a reader has shown lately, to tell a repeat from a late arrival. On a fleet,
// engines draw ids from one sequence and commit in any order, so an entry can arrive after one with
// a higher id: "at most the last id seen" is not "seen". A late entry comes within moments of its
// neighbours, so the newest few thousand ids are enough, and memory stays bounded on a long follow.

export class RecentIds {
  private readonly ids = new Set<number>();

  constructor(
    initial: Iterable<number> = [],
    private readonly capacity = 4096,
  ) {
    for (const id of initial) this.add(id);
  }

  /** Records `id`; false when it was recorded already (a repeat). */
  add(id: number): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    // A Set iterates in insertion order: the first is the oldest recorded.
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.values().next().value as number);
    return true;
  }

  has(id: number): boolean {
    return this.ids.has(id);
  }
}
