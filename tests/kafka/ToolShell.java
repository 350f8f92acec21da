import java.io.*;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.apache.kafka.common.utils.internals.Exit;

/** Runs Kafka main classes one after another in this JVM, so a tool call costs no JVM start.
 *  Request line (stdin): base64 fields separated by tabs: stdin text, main class, args...
 *  Answer line (stdout): exit code, base64 stdout, base64 stderr, separated by tabs.
 *  Exit.exit/halt throw instead of exiting; the first one decides the exit code and cuts the
 *  captured output where a real exit would have ended it (tools that catch Throwable around
 *  their own Exit.exit would otherwise print more). System and Scala Console streams are
 *  swapped per call. The main class "javac" runs the JDK's compiler with the arguments. */
public class ToolShell {
    static final class ExitCalled extends RuntimeException {
        final int code;
        ExitCalled(int code) { super(null, null, false, false); this.code = code; }
    }

    static Integer exitCode;
    static int outAtExit, errAtExit;
    static ByteArrayOutputStream out, err;

    static void exit(int code) {
        if (exitCode == null) {
            exitCode = code;
            System.out.flush();
            System.err.flush();
            outAtExit = out.size();
            errAtExit = err.size();
        }
        throw new ExitCalled(code);
    }

    static String b64(byte[] b) { return Base64.getEncoder().encodeToString(b); }
    static String unb64(String s) { return new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8); }

    public static void main(String[] ignored) throws Exception {
        PrintStream realOut = System.out, realErr = System.err;
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Exit.setExitProcedure((code, message) -> exit(code));
        Exit.setHaltProcedure((code, message) -> exit(code));
        String line;
        while ((line = requests.readLine()) != null) {
            String[] f = line.split("\t", -1);
            byte[] input = Base64.getDecoder().decode(f[0]);
            String mainClass = unb64(f[1]);
            String[] args = new String[f.length - 2];
            for (int i = 2; i < f.length; i++) args[i - 2] = unb64(f[i]);
            out = new ByteArrayOutputStream();
            err = new ByteArrayOutputStream();
            exitCode = null;
            PrintStream po = new PrintStream(out, true, StandardCharsets.UTF_8), pe = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(po);
            System.setErr(pe);
            System.setIn(new ByteArrayInputStream(input));
            int code = 0;
            try {
                if (mainClass.equals("javac")) {  // the JDK's compiler in this JVM: a compile costs no JVM start
                    code = javax.tools.ToolProvider.getSystemJavaCompiler().run(null, po, pe, args);
                } else {
                    java.lang.reflect.Method main = Class.forName(mainClass).getMethod("main", String[].class);
                    scala.Console$.MODULE$.withOut(po, () -> scala.Console$.MODULE$.withErr(pe, () -> {
                        try {
                            main.invoke(null, (Object) args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause() instanceof RuntimeException ? (RuntimeException) e.getCause() : new RuntimeException(e.getCause());
                        } catch (IllegalAccessException e) {
                            throw new RuntimeException(e);
                        }
                        return null;
                    }));
                }
            } catch (Throwable t) {
                if (exitCode == null) { t.printStackTrace(pe); code = 1; }
            }
            po.flush();
            pe.flush();
            byte[] o = out.toByteArray(), e = err.toByteArray();
            if (exitCode != null) {
                code = exitCode;
                o = java.util.Arrays.copyOf(o, outAtExit);
                e = java.util.Arrays.copyOf(e, errAtExit);
            }
            System.setOut(realOut);
            System.setErr(realErr);
            realOut.println(code + "\t" + b64(o) + "\t" + b64(e));
            realOut.flush();
        }
    }
}
