// Runs JUnit 4 test classes and prints one line per test: PASS, FAIL or SKIP, then the class
// and method (`Class#method`), so scripts/java-suite.sh can compare a run through the proxy
// with a run directly, test by test. Classes come as arguments; a class that cannot load is
// one FAIL line. A failure's message, and why a test was skipped (its assumption or @Ignore),
// follow on a line of their own, indented.
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.Ignore;
import org.junit.runner.Description;
import org.junit.runner.JUnitCore;
import org.junit.runner.Request;
import org.junit.runner.notification.Failure;
import org.junit.runner.notification.RunListener;

public final class Ring {
  private Ring() {}

  /**
   * Why a test was skipped: the suite's assumption that did not hold, as its source line reads
   * (the sources' folder comes as -Dring.sources), else the assumption's message.
   */
  static String assumption(Throwable t) {
    String dir = System.getProperty("ring.sources");
    if (dir != null && t != null) {
      for (StackTraceElement e : t.getStackTrace()) {
        String c = e.getClassName();
        if (!c.startsWith("org.mariadb.jdbc") || e.getLineNumber() <= 0) {
          continue;
        }
        int inner = c.indexOf('$');
        Path p = Paths.get(dir, (inner < 0 ? c : c.substring(0, inner)).replace('.', '/') + ".java");
        try {
          List<String> lines = Files.readAllLines(p, StandardCharsets.UTF_8);
          int n = e.getLineNumber();
          StringBuilder b = new StringBuilder(lines.get(n - 1).trim());
          // an assumption written over several lines: up to its end
          for (int i = n; i < lines.size() && i < n + 4 && b.indexOf(";") < 0; i++) {
            b.append(' ').append(lines.get(i).trim());
          }
          return b + " (" + e.getFileName() + ":" + n + ")";
        } catch (IOException | IndexOutOfBoundsException ignored) {
          break;
        }
      }
    }
    String m = t == null ? null : t.getMessage();
    return m == null || m.isEmpty() ? "an assumption of the test does not hold" : m;
  }

  public static void main(String[] args) {
    JUnitCore core = new JUnitCore();
    core.addListener(
        new RunListener() {
          private final List<String> failed = new ArrayList<>();

          private String name(Description d) {
            String m = d.getMethodName();
            return d.getClassName() + "#" + (m == null ? "(class)" : m);
          }

          private String line(String msg) {
            String m = String.valueOf(msg).replace('\n', ' ').replace('\r', ' ');
            return "    " + (m.length() > 300 ? m.substring(0, 300) : m);
          }

          @Override
          public void testFailure(Failure f) {
            String n = name(f.getDescription());
            failed.add(n);
            System.out.println("FAIL " + n);
            System.out.println(line(f.getMessage()));
          }

          @Override
          public void testAssumptionFailure(Failure f) {
            failed.add(name(f.getDescription()));
            System.out.println("SKIP " + name(f.getDescription()));
            System.out.println(line(assumption(f.getException())));
          }

          @Override
          public void testIgnored(Description d) {
            System.out.println("SKIP " + name(d));
            Ignore i = d.getAnnotation(Ignore.class);
            System.out.println(line(i == null || i.value().isEmpty() ? "@Ignore" : "@Ignore: " + i.value()));
          }

          @Override
          public void testFinished(Description d) {
            String n = name(d);
            if (!failed.remove(n)) {
              System.out.println("PASS " + n);
            }
          }
        });
    for (String c : args) {
      try {
        core.run(Request.aClass(Class.forName(c)));
      } catch (Throwable t) {
        System.out.println("FAIL " + c + "#(load)");
        System.out.println("    " + t);
      }
      System.out.flush();
    }
    System.exit(0);
  }
}
