#!/usr/bin/perl
# The real YAML::Syck for the differential tests in tests/format.rs.
#
# Reads one command per line on stdin and answers each with one line on
# stdout. Strings travel as hex of their bytes, so Perl sees byte strings,
# as the reference does with paths read from disk or from a recentfile.
#   version            the YAML::Syck version
#   dump HEX           hex of Dump({path => BYTES})
#   load FILE          "ok" and the hex of every recent[i]{path}, space-separated,
#                      or "err MESSAGE" when LoadFile dies
#   redump FILE OUT    LoadFile(FILE) written back with Dump to OUT (as the
#                      reference's write_1 does): "ok" or "err MESSAGE"
#   hashed SHA SIZE    the hex of Dump({recent => [one new event with this
#                      sha256 and size, the size a Perl integer]})
#   write OUT HEX...   a principal of Syck's own making holding these paths,
#                      newest first, written with Dump to OUT: "ok"
use strict;
use warnings;
use YAML::Syck;

$| = 1;
sub hex_of { unpack "H*", $_[0] }
sub oneline { my $m = shift; $m =~ s/\s+/ /g; $m }

while (my $line = <STDIN>) {
    chomp $line;
    my ($cmd, @arg) = split / /, $line;
    if ($cmd eq "version") {
        print "$YAML::Syck::VERSION\n";
    } elsif ($cmd eq "dump") {
        my $s = pack "H*", $arg[0] // "";
        print hex_of(Dump({ path => $s })), "\n";
    } elsif ($cmd eq "load") {
        my $doc = eval { LoadFile($arg[0]) };
        if (!$doc) {
            print "err ", oneline($@ || "no document"), "\n";
            next;
        }
        my $recent = ref $doc eq "HASH" ? $doc->{recent} : undef;
        if (ref $recent ne "ARRAY") {
            print "err no recent list\n";
            next;
        }
        print join(" ", "ok", map { defined $_->{path} ? hex_of($_->{path}) : "undef" } @$recent), "\n";
    } elsif ($cmd eq "redump") {
        my $doc = eval { LoadFile($arg[0]) };
        if (!$doc) {
            print "err ", oneline($@ || "no document"), "\n";
            next;
        }
        open my $fh, ">", $arg[1] or die "$arg[1]: $!";
        print $fh Dump($doc);
        close $fh or die "$arg[1]: $!";
        print "ok\n";
    } elsif ($cmd eq "hashed") {
        my $ev = { epoch => "1700000000.5", path => "a", sha256 => $arg[0], size => 0 + $arg[1], type => "new" };
        print hex_of(Dump({ recent => [$ev] })), "\n";
    } elsif ($cmd eq "write") {
        my $out = shift @arg;
        my $n = @arg;
        my @recent = map {
            { epoch => sprintf("%d.5", 1700100000 - $_), path => pack("H*", $arg[$_]), type => "new" }
        } 0 .. $n - 1;
        my $doc = {
            meta => {
                Producers => { '$0' => "syck.pl", "File::Rsync::Mirror::Recentfile" => "0.0.8", time => "1700100000.5" },
                aggregator => [qw(1h 6h 1d 1W 1M 1Q 1Y Z)],
                dirtymark => "1700000000.5",
                filenameroot => "RECENT",
                interval => "1h",
                merged => {},
                minmax => { max => "1700100000.5", min => "1700000000.5" },
                protocol => 1,
                serializer_suffix => ".yaml",
            },
            recent => \@recent,
        };
        open my $fh, ">", $out or die "$out: $!";
        print $fh Dump($doc);
        close $fh or die "$out: $!";
        print "ok\n";
    } else {
        die "unknown command: $cmd\n";
    }
}
