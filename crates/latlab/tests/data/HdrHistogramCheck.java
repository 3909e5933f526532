// Another HdrHistogram implementation reads latlab's histograms: Java's, the reference
// one (libhdrhistogram-java). Run as a single-file program by the test
// `real_tools::javas_hdrhistogram_reads_the_runs_histograms_as_latlab_reported_them`:
//
//   java -cp /usr/share/java/hdrhistogram.jar HdrHistogramCheck.java < streams.tsv
//
// Each input line is one stream of a Run: label, the histogram's `data`
// (HdrHistogram-V2-DEFLATE-base64), then latlab's own figures: samples, exact min and max
// (ns), and `rank=value` for each reported percentile. The histogram is decoded with
// Histogram.decodeFromCompressedByteBuffer and must hold `samples` values, have its
// lowest and highest values in the buckets of the exact min and max, and give latlab's
// percentiles.
//
// latlab ranks a percentile by nearest rank, ceil(p/100 * n), as Java's
// getValueAtPercentile does since 2.1.10 (older versions rounded p/100 * n to the
// nearest integer). The check walks the decoded buckets with that rule itself, so it
// compares the histograms' contents whatever the installed version, reads each value as
// the highest of its bucket as both libraries do, and clamps it to the exact min and max
// as latlab does.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

public class HdrHistogramCheck {
    public static void main(String[] args) throws Exception {
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String> failures = new ArrayList<>();
        int streams = 0;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            streams++;
            String[] field = line.split("\t");
            String label = field[0];
            Histogram h = Histogram.decodeFromCompressedByteBuffer(
                ByteBuffer.wrap(Base64.getDecoder().decode(field[1])), 0);
            long samples = Long.parseLong(field[2]);
            // Negative samples (early wakes) are recorded as 0.
            long min = Math.max(0, Long.parseLong(field[3]));
            long max = Long.parseLong(field[4]);
            if (h.getTotalCount() != samples) {
                failures.add(label + ": total count " + h.getTotalCount() + " != samples " + samples);
                continue;
            }
            if (!h.valuesAreEquivalent(h.getMinValue(), min)) {
                failures.add(label + ": lowest value " + h.getMinValue() + " not in the bucket of min " + min);
            }
            if (!h.valuesAreEquivalent(h.getMaxValue(), max)) {
                failures.add(label + ": highest value " + h.getMaxValue() + " not in the bucket of max " + max);
            }
            for (int i = 5; i < field.length; i++) {
                String[] rankValue = field[i].split("=");
                long ours = Long.parseLong(rankValue[1]);
                long theirs = Math.min(max, Math.max(min, nearestRank(h, new BigDecimal(rankValue[0]))));
                if (theirs != ours) {
                    failures.add(label + ": p" + rankValue[0] + " Java " + theirs + " != latlab " + ours);
                }
            }
        }
        for (String failure : failures) {
            System.out.println(failure);
        }
        if (streams == 0) {
            System.out.println("hdrh-java: no stream given");
            System.exit(1);
        }
        System.out.println("hdrh-java: " + (streams - failures.size()) + " passed, " + failures.size()
            + " failed (histograms read by the Java HdrHistogram library)");
        System.exit(failures.isEmpty() ? 0 : 1);
    }

    /// The value of nearest rank ceil(p/100 * n), at least 1, as the highest value of its bucket.
    static long nearestRank(Histogram h, BigDecimal percentile) {
        long wanted = percentile.multiply(BigDecimal.valueOf(h.getTotalCount()))
            .divide(BigDecimal.valueOf(100), 0, RoundingMode.CEILING).longValueExact();
        wanted = Math.max(1, wanted);
        long seen = 0;
        for (HistogramIterationValue v : h.recordedValues()) {
            seen += v.getCountAtValueIteratedTo();
            if (seen >= wanted) {
                return h.highestEquivalentValue(v.getValueIteratedTo());
            }
        }
        return h.getMaxValue();
    }
}
