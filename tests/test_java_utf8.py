"""`pylog dump-segment` prints keys and payloads as Kafka's tools do, through Java's
`new String(bytes, UTF_8)`: malformed UTF-8 becomes as many U+FFFD as Java makes of it, which is
not what Python's "replace" makes (an encoded surrogate, ED A0 80, is one in Java and three in
Python). Timestamps and ids inside internal-topic records are such bytes, so a dump compared
with kafka-dump-log differed now and then.

Checked against the JDK itself: random byte strings rich in lead bytes, decoded by a Java program
and by `decode_java`, must read the same.
"""
from __future__ import annotations

import random

from support.kafka_peer import java_program

from pylog.commands.java_utf8 import decode_java

JAVA = """
import java.io.*;
import java.nio.charset.StandardCharsets;

public class JavaUtf8 {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            byte[] b = new byte[line.length() / 2];
            for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
            for (byte x : new String(b, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8))
                out.append(String.format("%02x", x));
            out.append('\\n');
        }
        System.out.print(out);
    }
}
"""

LEADS = [0x80, 0x8F, 0x90, 0x9F, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]


def test_decode_java_reads_bytes_as_the_jdk_does():
    rnd = random.Random(7)
    cases = [bytes(rnd.choice((rnd.randrange(256), rnd.randrange(0x80, 0x100), rnd.choice(LEADS)))
                   for _ in range(rnd.randint(1, 7))) for _ in range(20000)]
    cases += [b"\xed\xa0\x80", b"\xed\xa0", b"a\xf0\x9f\x98", b"\xe2\x82\xac", "é😀".encode()]
    out = java_program(JAVA, input="".join(c.hex() + "\n" for c in cases)).stdout.split("\n")
    wrong = [(c.hex(), java) for c, java in zip(cases, out)
             if decode_java(c).encode("utf-8", "surrogatepass").hex() != java]
    assert not wrong, f"{len(wrong)} of {len(cases)} differ from Java, e.g. {wrong[:5]}"
