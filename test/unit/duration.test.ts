import { expect } from 'chai';
import { parseDuration, parseFlagDuration, parsePointInTime } from '../../shared/duration.js';

describe('durations (shared/duration.ts)', function () {
  describe('parseFlagDuration: what every flag takes', function () {
    it('Go units, days, and sums of terms', function () {
      expect(parseFlagDuration('90s')).to.equal(90_000);
      expect(parseFlagDuration('5m')).to.equal(300_000);
      expect(parseFlagDuration('1h30m')).to.equal(5_400_000);
      expect(parseFlagDuration('1d')).to.equal(86_400_000);
      expect(parseFlagDuration('1d2h')).to.equal(93_600_000);
      expect(parseFlagDuration('500ms')).to.equal(500);
      expect(parseFlagDuration('1.5h')).to.equal(5_400_000);
    });

    it('a bare number is seconds (what --timeout took before)', function () {
      expect(parseFlagDuration('15')).to.equal(15_000);
      expect(parseFlagDuration('0.5')).to.equal(500);
      expect(parseFlagDuration('0')).to.equal(0);
    });

    it('refuses what is not a duration, and negative ones', function () {
      for (const text of ['', 'soon', '5x', '1h30', 'h', '--5m']) {
        expect(() => parseFlagDuration(text), text).to.throw(/^expected a duration such as 90s, 5m, 1h30m or 1d/);
      }
      expect(() => parseFlagDuration('-5m')).to.throw('must not be negative');
    });
  });

  describe('parsePointInTime: a moment', function () {
    const now = Date.parse('2026-11-23T12:00:00Z');

    it('an RFC 3339 time, with Z or an offset', function () {
      expect(parsePointInTime('2026-11-23T09:00:00Z', 'ago', now)).to.equal(Date.parse('2026-11-23T09:00:00Z'));
      expect(parsePointInTime('2026-11-23T10:00:00.250+01:00', 'ago', now)).to.equal(
        Date.parse('2026-11-23T09:00:00.250Z'),
      );
    });

    it('a duration back from now (ago) or ahead of it', function () {
      expect(parsePointInTime('1h', 'ago', now)).to.equal(now - 3_600_000);
      expect(parsePointInTime('1d', 'ahead', now)).to.equal(now + 86_400_000);
      expect(parsePointInTime('30', 'ago', now)).to.equal(now - 30_000);
    });

    it('refuses anything else, saying both forms', function () {
      for (const text of ['yesterday', '2026-11-23', '2026-13-45T00:00:00Z', '2026-11-23T09:00:00']) {
        expect(() => parsePointInTime(text, 'ago', now), text).to.throw(/^expected an RFC 3339 time .* or a duration/);
      }
    });
  });

  describe("parseDuration: the API's parameters and config files, Go's syntax exactly", function () {
    it('takes Go durations and refuses days and bare numbers', function () {
      expect(parseDuration('1h30m')).to.equal(5_400_000);
      expect(parseDuration('300ms')).to.equal(300);
      expect(parseDuration('0')).to.equal(0);
      expect(() => parseDuration('5')).to.throw('time: missing unit in duration "5"');
      expect(() => parseDuration('1d')).to.throw('time: unknown unit "d" in duration "1d"');
      expect(() => parseDuration('bogus')).to.throw('time: invalid duration "bogus"');
    });
  });
});
