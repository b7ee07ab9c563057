import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, signUp, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { addMember } from '../members/helpers.js';
import { createUploadTestApp, fileExists, localPath, png, postImage, upload, type UploadAnswer, type UploadTestApp } from './helpers.js';

/**
 * GET /uploads, GET /uploads/usage, DELETE /uploads/:id and who may call them and POST
 * /uploads/image: the project's secret key or a member's session with X-Project-Id; never
 * another project's key, never the public key (docs/uploads.md "API").
 */

let t: UploadTestApp;
let owner: SignedInUser;
let project: TestProject;
let other: TestProject;
let images: UploadAnswer[];
beforeAll(async () => {
  t = await createUploadTestApp();
  ({ user: owner, project } = await newProject(t.app));
  other = (await newProject(t.app)).project;
  images = [];
  for (let i = 0; i < 5; i++) images.push(await upload(t.app, project, await png(10 + i, 10), { filename: `img${i}.png` }));
});
afterAll(() => t?.close());

const list = (auth: Record<string, string>, query = '') => t.app.inject({ method: 'GET', url: `/uploads${query}`, headers: auth });

describe('GET /uploads', () => {
  it('lists the project\'s images newest first, cursor-paged, total on the first page', async () => {
    const first = await list(bearer(project.secret), '?limit=2');
    expect(first.statusCode).toBe(200);
    const page1 = first.json();
    expect(page1).toMatchObject({ hasMore: true, total: 5 });
    expect(page1.data.map((u: UploadAnswer) => u.filename)).toEqual(['img4.png', 'img3.png']);
    expect(page1.data[0]).toEqual(images[4]);
    const page2 = (await list(bearer(project.secret), `?limit=2&cursor=${page1.cursor}`)).json();
    expect(page2.data.map((u: UploadAnswer) => u.filename)).toEqual(['img2.png', 'img1.png']);
    expect(page2.total).toBe(0);
    const page3 = (await list(bearer(project.secret), `?limit=2&cursor=${page2.cursor}`)).json();
    expect(page3).toMatchObject({ hasMore: false, cursor: null });
    expect(page3.data.map((u: UploadAnswer) => u.filename)).toEqual(['img0.png']);
  });

  it('answers 422 naming the cursor for a malformed one', async () => {
    for (const cursor of ['%%%', 'bm90LWEtdXVpZA', '']) {
      const res = await list(bearer(project.secret), `?cursor=${cursor}`);
      if (cursor === '') {
        expect(res.statusCode).toBe(200);
        continue;
      }
      expect(expectEnvelope(res, 422, 'VALIDATION_ERROR').errors[0].field).toBe('cursor');
    }
  });

  it('shows another project none of them', async () => {
    const res = (await list(bearer(other.secret))).json();
    expect(res).toMatchObject({ data: [], total: 0 });
  });
});

describe('GET /uploads/usage', () => {
  it('answers the bytes and files stored, the quota (default 1024 MB) and the file limit', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/uploads/usage', headers: bearer(project.secret) });
    expect(res.json()).toEqual({
      usedBytes: images.reduce((sum, i) => sum + i.size, 0),
      quotaBytes: 1024 * 1024 * 1024,
      files: 5,
      maxFileBytes: 10 * 1024 * 1024,
    });
  });
});

describe('isolation and authentication', () => {
  it('another project\'s key cannot delete an image (404, the image and its file stay)', async () => {
    const target = images[0] as UploadAnswer;
    const res = await t.app.inject({ method: 'DELETE', url: `/uploads/${target.id}`, headers: bearer(other.secret) });
    expectEnvelope(res, 404, 'NOT_FOUND');
    expect(await t.db.db.selectFrom('uploads').select('id').where('id', '=', target.id).execute()).toHaveLength(1);
    expect(await fileExists(localPath(t.dataDir, target.key))).toBe(true);
  });

  it('an image uploaded with another project\'s key belongs to that project', async () => {
    const theirs = await upload(t.app, other, await png());
    const row = await t.db.db.selectFrom('uploads').select('project_id').where('id', '=', theirs.id).executeTakeFirstOrThrow();
    expect(row.project_id).toBe(other.id);
    expect((await list(bearer(project.secret))).json().data.map((u: UploadAnswer) => u.id)).not.toContain(theirs.id);
  });

  it('refuses the public key (401 INVALID_API_KEY) and no credentials (401) on every uploads route', async () => {
    const calls = [
      () => postImage(t.app, bearer(project.public), Buffer.from('x')),
      () => list(bearer(project.public)),
      () => t.app.inject({ method: 'GET', url: '/uploads/usage', headers: bearer(project.public) }),
      () => t.app.inject({ method: 'DELETE', url: `/uploads/${images[1]?.id}`, headers: bearer(project.public) }),
    ];
    for (const call of calls) expectEnvelope(await call(), 401, 'INVALID_API_KEY');
    expect((await postImage(t.app, {}, Buffer.from('x'))).statusCode).toBe(401);
    expect((await list({})).statusCode).toBe(401);
  });

  it('a MEMBER uploads, lists and deletes with the session cookie and X-Project-Id; a stranger gets 403', async () => {
    const member = await addMember(t.app, owner, project.id, 'MEMBER');
    const session = { cookie: member.cookie, 'x-project-id': project.id };
    const res = await postImage(t.app, session, await png());
    expect(res.statusCode, res.body).toBe(201);
    expect((await list(session)).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'DELETE', url: `/uploads/${res.json().id}`, headers: session })).statusCode).toBe(204);

    const stranger = await signUp(t.app);
    const foreign = { cookie: stranger.cookie, 'x-project-id': project.id };
    expectEnvelope(await postImage(t.app, foreign, await png()), 403, 'FORBIDDEN');
    expectEnvelope(await list(foreign), 403, 'FORBIDDEN');
  });

  it('/files/:key needs no credentials (images in emails are public)', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/files/${images[2]?.key}` });
    expect(res.statusCode).toBe(200);
  });
});

describe('documentation and content types', () => {
  it('OpenAPI documents POST /uploads/image as multipart with the image field, its 201 Upload, 403, 413 and 422', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const op = doc.paths['/uploads/image'].post;
    expect(Object.keys(op.requestBody.content)).toEqual(['multipart/form-data']);
    expect(op.requestBody.content['multipart/form-data'].schema.properties.image).toMatchObject({ type: 'string', format: 'binary' });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['201', '401', '403', '413', '422']));
    expect(doc.paths['/files/{key}'].get.security).toEqual([]);
  });

  it('a raw image body (not multipart) is 415 naming multipart/form-data', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/uploads/image', headers: { ...bearer(project.secret), 'content-type': 'image/png' }, payload: await png() });
    expect(expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE').message).toMatch(/multipart\/form-data/);
  });
});
