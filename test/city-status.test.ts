import { expect } from 'chai';
import { CityApi } from './helpers/city-api.js';
import { TestSupervisor, withSupervisor } from './helpers/supervisor.js';

describe('GET /v0/city/{cityName}/status', function () {
  let sup: TestSupervisor;

  withSupervisor(async (started) => {
    sup = started;
    await sup.createCity('alpha');
  });

  async function status() {
    const { data, response } = await sup.api.GET('/v0/city/{cityName}/status', {
      params: { path: { cityName: 'alpha' } },
    });
    expect(response.status).to.equal(200);
    return data!;
  }

  it('counts the work and mail the city really has', async function () {
    expect((await status()).work).to.deep.equal({ open: 0, in_progress: 0, ready: 0 });
    expect((await status()).mail).to.deep.equal({ unread: 0, total: 0 });
    const api = new CityApi(sup, 'alpha');
    const first = await api.create({ title: 'first' });
    const second = await api.create({ title: 'second' });
    await api.create({ title: 'third' });
    await api.addDep(second.id, first.id, 'blocks');
    await api.update(first.id, { status: 'in_progress' });
    await api.create({ title: 'a convoy', type: 'convoy' });
    const sent = await api.post<{ id: string }>('/mail', { to: 'bob', subject: 'hi', body: 'there' });
    expect(sent.status).to.equal(201);
    await api.post('/mail', { to: 'bob', subject: 'again', body: 'there' });
    expect((await api.post(`/mail/${sent.body.id}/read`)).status).to.equal(200);
    const { work, mail } = await status();
    // Open: second (blocked by first) and third; ready: third only; in progress: first. Not the convoy, not mail.
    expect(work).to.deep.equal({ open: 2, in_progress: 1, ready: 1 });
    expect(mail).to.deep.equal({ unread: 1, total: 2 });
  });
});
