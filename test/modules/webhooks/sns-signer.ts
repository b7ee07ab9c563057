import { generateKeyPairSync, type KeyObject, randomUUID, sign, X509Certificate } from 'node:crypto';

/**
 * A local stand-in for Amazon SNS: an RSA key, a self-signed certificate for it (built here
 * in DER, so the tests need no openssl binary), and messages signed the way SNS signs them.
 */

const len = (n: number) => (n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff]);
const tlv = (tag: number, ...parts: Buffer[]) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag, ...len(body.length)]), body]);
};
const seq = (...parts: Buffer[]) => tlv(0x30, ...parts);
const int = (bytes: Buffer) => tlv(0x02, (bytes[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
const SHA256_WITH_RSA = Buffer.from('06092a864886f70d01010b0500', 'hex'); // OID 1.2.840.113549.1.1.11, NULL
const COMMON_NAME = Buffer.from('0603550403', 'hex'); // OID 2.5.4.3
const name = (cn: string) => seq(tlv(0x31, seq(COMMON_NAME, tlv(0x0c, Buffer.from(cn)))));
const utcTime = (d: Date) => tlv(0x17, Buffer.from(`${d.toISOString().slice(2, 19).replace(/[-T:]/g, '')}Z`));

/** A random positive 8-byte serial; a leading zero byte would be a non-minimal (invalid) DER INTEGER. */
function serialNumber(): Buffer {
  const bytes = Buffer.from(randomUUID().replace(/-/g, '').slice(0, 16), 'hex');
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return bytes;
}

/** A self-signed X.509 v3 certificate (PEM) for the key pair, valid between the two dates. */
export function selfSignedCertificate(publicKey: KeyObject, privateKey: KeyObject, validity: { from: Date; to: Date }): string {
  const algorithm = seq(SHA256_WITH_RSA);
  const subject = name('sns.amazonaws.com');
  const tbs = seq(
    tlv(0xa0, int(Buffer.from([2]))),
    int(serialNumber()),
    algorithm,
    subject,
    seq(utcTime(validity.from), utcTime(validity.to)),
    subject,
    publicKey.export({ type: 'spki', format: 'der' }),
  );
  const signature = sign('sha256', tbs, privateKey);
  const der = seq(tbs, algorithm, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const pem = `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE-----\n`.replace(/\n\n/g, '\n');
  new X509Certificate(pem); // fails loudly if the DER above is wrong
  return pem;
}

export const TOPIC_ARN = 'arn:aws:sns:us-east-1:123456789012:ses-notifications';
export const CERT_URL = 'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-local-test.pem';

export type SnsFields = Record<string, string | undefined>;

/** The string SNS signs, written from the AWS documentation (independently of src/). */
function stringToSign(msg: SnsFields): string {
  const keys =
    msg.Type === 'Notification'
      ? ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type']
      : ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'];
  return keys.filter((k) => msg[k] !== undefined).map((k) => `${k}\n${msg[k]}\n`).join('');
}

export interface SnsSigner {
  /** The certificate PEM served for CERT_URL. */
  certificatePem: string;
  /** A Notification carrying `message` (an SES event object), signed. */
  notification(message: object, opts?: { version?: '1' | '2'; topicArn?: string; subject?: string; certUrl?: string }): SnsFields;
  subscriptionConfirmation(opts?: { subscribeUrl?: string }): SnsFields;
  /** Signs any field set as is (for tests that tamper before or after signing). */
  sign(fields: SnsFields, version?: '1' | '2'): SnsFields;
}

export function createSnsSigner(validity = { from: new Date(Date.now() - 86_400_000), to: new Date(Date.now() + 365 * 86_400_000) }): SnsSigner {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const certificatePem = selfSignedCertificate(publicKey, privateKey, validity);
  const signFields = (fields: SnsFields, version: '1' | '2' = '2'): SnsFields => ({
    ...fields,
    SignatureVersion: version,
    Signature: sign(version === '1' ? 'sha1' : 'sha256', Buffer.from(stringToSign(fields)), privateKey).toString('base64'),
    SigningCertURL: fields.SigningCertURL ?? CERT_URL,
  });
  return {
    certificatePem,
    sign: signFields,
    notification(message, opts = {}) {
      return signFields(
        {
          Type: 'Notification',
          MessageId: randomUUID(),
          TopicArn: opts.topicArn ?? TOPIC_ARN,
          Subject: opts.subject,
          Message: JSON.stringify(message),
          Timestamp: new Date().toISOString(),
          SigningCertURL: opts.certUrl,
          UnsubscribeURL: `https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=${TOPIC_ARN}:1`,
        },
        opts.version,
      );
    },
    subscriptionConfirmation(opts = {}) {
      const token = randomUUID().replace(/-/g, '');
      return signFields({
        Type: 'SubscriptionConfirmation',
        MessageId: randomUUID(),
        Token: token,
        TopicArn: TOPIC_ARN,
        Message: `You have chosen to subscribe to the topic ${TOPIC_ARN}.`,
        SubscribeURL: opts.subscribeUrl ?? `https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${TOPIC_ARN}&Token=${token}`,
        Timestamp: new Date().toISOString(),
      });
    },
  };
}

/** An SES event as SES publishes it through SNS (classic notification format). */
export function sesEvent(
  kind: 'Bounce' | 'Complaint' | 'Delivery',
  mail: { messageId: string; headerMessageId?: string },
  opts: { bounceType?: 'Permanent' | 'Transient' | 'Undetermined'; format?: 'notificationType' | 'eventType' } = {},
): object {
  const timestamp = new Date().toISOString();
  const headers = mail.headerMessageId
    ? { commonHeaders: { messageId: mail.headerMessageId, subject: 'Hello' }, headers: [{ name: 'Message-ID', value: mail.headerMessageId }] }
    : {};
  const details =
    kind === 'Bounce'
      ? {
          bounce: {
            bounceType: opts.bounceType ?? 'Permanent',
            bounceSubType: opts.bounceType === 'Transient' ? 'MailboxFull' : 'General',
            bouncedRecipients: [{ emailAddress: 'rcpt@example.com', action: 'failed', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user unknown' }],
            timestamp,
            feedbackId: `fb-${randomUUID()}`,
          },
        }
      : kind === 'Complaint'
        ? { complaint: { complainedRecipients: [{ emailAddress: 'rcpt@example.com' }], complaintFeedbackType: 'abuse', timestamp, feedbackId: `fb-${randomUUID()}` } }
        : { delivery: { timestamp, processingTimeMillis: 812, recipients: ['rcpt@example.com'], smtpResponse: '250 2.0.0 OK' } };
  return {
    [opts.format ?? 'notificationType']: kind,
    mail: { timestamp, source: 'news@sender.example', sourceArn: 'arn:aws:ses:us-east-1:123456789012:identity/sender.example', messageId: mail.messageId, destination: ['rcpt@example.com'], ...headers },
    ...details,
  };
}
