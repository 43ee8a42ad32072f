// The invalid-manifest suite: each YAML file under fixtures/invalid/ is valid but for one mistake, and names in its
// leading comments the field its error must name (`# field:`) and words of the message (`# message:`).
import { readdirSync, readFileSync } from 'node:fs';

const INVALID = new URL('./fixtures/invalid/', import.meta.url);

export interface InvalidFixture {
  file: string;
  text: string;
  field: string;
  message: string;
}

export function invalidFixtures(): InvalidFixture[] {
  return readdirSync(INVALID)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((file) => {
      const text = readFileSync(new URL(file, INVALID), 'utf8');
      const field = /^# field: (.+)$/m.exec(text)?.[1];
      const message = /^# message: (.+)$/m.exec(text)?.[1];
      if (!field || !message) throw new Error(`${file} lacks its "# field:" / "# message:" comment`);
      return { file, text, field, message };
    });
}
